"""Text-to-CAD evaluation: task suites (:mod:`aira_core.eval.suite`), the checks a part is
scored by (:mod:`aira_core.eval.checks`) and their measurement on a kernel
(:mod:`aira_core.eval.measure`). See docs/eval.md."""
