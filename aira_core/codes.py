"""The registry of the core's stable diagnostic codes: each code, the phase that raises it and
what it means. ``docs/codes.md`` is generated from it (``python -m aira_core.codes --markdown``),
and tests/test_codes.py fails on a code the core raises that is not registered here, and on a
registered code nothing raises any more.

Plain data, cheap to import (no pydantic): the CLI and the docs generator read it as it is.
A kernel's codes are the plugin's own: each of its capabilities declares the codes it can
raise (``diagnostics`` in the package manifest, checked by conformance), and ``docs/codes.md``
lists a first-party package's declared codes from its manifest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple


class Code(NamedTuple):
    code: str
    phase: str
    meaning: str
    reserved: str | None = None
    """Why the code stays registered although nothing raises it now (None: something does)."""


PHASES: dict[str, str] = {
    "cli": "the command line: usage, the files and arguments a command reads, its output",
    "plugin": "plugin discovery and loading (docs/plugins.md)",
    "manifest": "reading a capability package (docs/catalog.md)",
    "signature": "verifying a package's signature against the trust store",
    "trust": "the trust store and publisher keys",
    "lint": "the rules every capability descriptor keeps (docs/catalog.md, Lint codes)",
    "conformance": "a descriptor checked against the kernel implementation of its target",
    "catalog": "admitting packages into the production catalog",
    "discovery": "catalog.search, catalog.describe and the discovery benchmark",
    "store": "the model store: branches, revisions, compare-and-swap (docs/runtime.md)",
    "patch": "a patch or a whole AMIR document checked against the model's rules",
    "read": "reading a revision: aliases, pages, select paths",
    "plan": "plan.check, before any kernel or store call (docs/runtime.md)",
    "expression": "the expression language of workflow templates and repair templates, at lint "
    "(in a LINT_* message), on expansion, or in a repair's REPAIR_TEMPLATE_FAILED "
    "(docs/workflows.md, The expression language)",
    "runtime": "the task runtime: meta-operation contract, transaction stages, grants",
    "terminal": "why the runtime ends a task, or lets it continue (TerminalDecision.reason)",
    "kernel": "kernel calls made by the core (a kernel's own codes: see its package)",
    "step": "the step host: decisions, ledger, capsule, runs and trajectories (docs/step.md)",
    "report": "run reports: aira report, and the report.html aira run and aira demo write "
    "(README, The run report)",
    "provider": "the wire to a model provider: provider settings, the HTTP call, the chat "
    "request and its reply (docs/gateway.md)",
    "gateway": "the provider gateway: tasks, attempts and their facts in the attempt ledger "
    "($AIRA_HOME/gateway.sqlite3)",
    "eval": "text-to-CAD task suites and their references: aira eval (docs/eval.md)",
    "mcp": "aira mcp serve: task handles, tools, scoped bindings and resources (docs/mcp.md)",
    "continuity": "the wire of the three-product contract (Intent Loop, Context Continuity, "
    "Execution Fidelity Guard) read or written by plugins/aira-continuity",
    "integration": "the Intent / Continuity / Guard adapters a run is given, and the guard's "
    "verdicts (docs/plugins.md, aira_register_integrations)",
}
"""The phases, in the order docs/codes.md lists them: the part of Aira that raises a code.
(A :class:`~aira_core.diagnostics.Diagnostic` may also carry a ``phase`` field: the runtime
stage it arose in, such as check, preview or commit.)"""


def _phase(phase: str, *entries: tuple[str, str] | tuple[str, str, str]) -> list[Code]:
    return [Code(e[0], phase, *e[1:]) for e in entries]


_CODES = (
    *_phase(
        "cli",
        (
            "USAGE_INVALID",
            "the command line cannot be parsed (unknown option, bad value, "
            "missing argument); exit status 2",
        ),
        ("INPUT_NOT_JSON", "a file a command reads (patch, document …) is not strict JSON"),
        ("INPUT_UNREADABLE", "a file a command reads cannot be read"),
        (
            "INPUT_NOT_FILE",
            "a file a command reads is a FIFO, a device, a socket or a directory, not a "
            "regular file; refused without blocking or reading",
        ),
        (
            "INPUT_TOO_LARGE",
            "a file a command reads is over the size cap of its kind (docs/security.md); "
            "no more than the cap is read",
        ),
        (
            "FINDINGS_TRUNCATED",
            "a list of findings was cut to the first 20 of each code (200 in all); this "
            "one counts the rest by code",
        ),
        (
            "OUTPUT_NOT_JSON",
            "a result cannot be printed as JSON (NaN, a lone surrogate, too "
            "deep); nothing half-printed",
        ),
        (
            "ARGS_INVALID",
            "arguments are not a JSON object: `aira query --args`, a task "
            "runtime call or batch, or a task id that is not a string",
        ),
        (
            "GRANT_INVALID",
            "the `--grant` file is not a valid Session Grant, or `aira mcp serve` is given "
            "both --grant and --allow-publish",
        ),
        ("INTENT_FRAME_INVALID", "the `--intent` file is not a valid Intent Frame"),
        ("PLAN_INVALID", "the plan file is not a valid plan document"),
        (
            "ENVELOPE_INVALID",
            "the envelope file (`aira plan repair`) is not a valid observation envelope",
        ),
        (
            "CAPABILITY_UNKNOWN",
            "`aira catalog signatures` names a capability that is not in the production catalog",
        ),
        (
            "SEARCH_REQUEST_INVALID",
            "the options of `aira catalog search` do not make a valid search request",
        ),
        ("KEY_EXISTS", "making a signing key refuses an existing file or symlink at the path"),
        (
            "CATALOG_NEW_NAME_INVALID",
            "`aira catalog new` is given a package name that is not lowercase words joined by "
            ". or - (at most 64 characters); nothing is written",
        ),
        (
            "CATALOG_NEW_TARGET_EXISTS",
            "`aira catalog new` refuses a directory that is not empty (or a file or symlink) "
            "where the package would go; nothing is written",
        ),
        ("TRUST_PUBLISHER_INVALID", "a publisher name is not lowercase words joined by . or -"),
        ("IMPORT_UNSUPPORTED", "no admitted importer reads the file's kind"),
        ("IMPORT_FAILED", "the file to import is not UTF-8 text, or cannot be read"),
        ("LABEL_INVALID", "an import's label cannot be a body alias"),
        ("LABEL_TAKEN", "an import's label already names a body of the head revision"),
        ("EXPORT_FAILED", "the kernel wrote nothing for the format"),
        (
            "OUTPUT_EXISTS",
            "the file a command writes (`--out` …) exists, or is a symlink; `--force` "
            "replaces it with a new file",
        ),
        (
            "OUTPUT_PROTECTED",
            "the file a command writes is one of Aira's own stores (model store, trust store, "
            "catalog state); never replaced, not even with `--force`",
        ),
        (
            "OUTPUT_UNWRITABLE",
            "the file a command writes cannot be written: no such directory, no permission, "
            "or a directory, device or FIFO is there",
        ),
        ("IO_ERROR", "an operating-system error on a file a command uses"),
        ("ABORTED", "the command was aborted (typer.Abort, e.g. Ctrl-C at a prompt)"),
        (
            "WARM_HOST_LOST",
            "the warm CLI host (`AIRA_WARM=1`) ended while it ran a `plan apply`: whether the "
            "plan was committed is unknown, so it is not run again (see `aira model log`)",
        ),
        (
            "INTERNAL_ERROR",
            "an unexpected exception: a bug in aira (AIRA_DEBUG=1 shows the "
            "traceback); exit status 2",
        ),
    ),
    *_phase(
        "plugin",
        ("PLUGIN_IMPORT_FAILED", "importing the entry-point module raised"),
        ("PLUGIN_INVALID_HOOKIMPL", "a hook function has a wrong signature or names no known hook"),
        ("PLUGIN_HOOK_FAILED", "a register hook raised"),
        (
            "PLUGIN_REGISTRATION_INVALID",
            "`register` got an object of the wrong type or without a name",
        ),
        (
            "PLUGIN_DUPLICATE_NAME",
            "two plugins, or two objects of one type, share a name (two distributions "
            "declaring one plugin name: neither is loaded, unless one is first-party)",
        ),
        (
            "PLUGIN_TIMEOUT",
            "importing a plugin or calling its hook took longer than AIRA_PLUGIN_TIMEOUT; "
            "the plugin (or what the hook registered) is ignored",
        ),
        ("PLUGIN_LOAD_FAILED", "AIRA_STRICT_PLUGINS=1 and at least one of the errors above"),
    ),
    *_phase(
        "manifest",
        ("MANIFEST_MISSING", "the package has no manifest.json"),
        (
            "MANIFEST_NOT_JSON",
            "manifest.json is not strict JSON (syntax, NaN, Infinity, "
            "numbers out of range, nesting too deep)",
        ),
        ("MANIFEST_DUPLICATE_KEY", "manifest.json repeats a key in an object"),
        (
            "MANIFEST_NOT_CANONICAL",
            "manifest.json holds a value without an RFC 8785 form "
            "(e.g. an integer a double cannot hold)",
        ),
        (
            "PACKAGE_PATH_INVALID",
            "a path given as a package is neither a package directory nor a manifest file",
        ),
        ("SCHEMA_NOT_FOUND", "`aira schema` names no contract or document schema"),
    ),
    *_phase(
        "signature",
        ("SIGNATURE_MISSING", "the package has no signature file (manifest.sig)"),
        ("SIGNATURE_MALFORMED", "manifest.sig is not a valid aira.signature/1 document"),
        ("SIGNATURE_UNKNOWN_KEY", "the signing key is not in the trust store"),
        (
            "SIGNATURE_PUBLISHER_MISMATCH",
            "the signature, the manifest and the key do not name the same publisher",
        ),
        (
            "SIGNATURE_INVALID",
            "the signature does not verify: the manifest changed after "
            "signing, or another key signed it",
        ),
    ),
    *_phase(
        "trust",
        ("TRUST_KEY_EXPIRED", "the signing key is past its expiry"),
        ("TRUST_KEY_REVOKED", "the signing key is revoked (also: adding a revoked key again)"),
        (
            "TRUST_KEY_INVALID",
            "a trust-store key is not base64 of a raw Ed25519 key, or its "
            "keyId is not the first 16 hex digits of sha256(publicKey)",
        ),
        ("TRUST_KEY_CONFLICT", "the key is already trusted for another publisher"),
        ("TRUST_KEY_NOT_FOUND", "revoking a key id the trust store does not hold"),
        ("TRUST_STORE_INVALID", "the trust store file is not a valid aira.trust-store/1 document"),
        ("TRUST_STORE_UNAVAILABLE", "the trust store cannot be read or written"),
        (
            "TRUST_STORE_MISSING",
            "the trust store is missing although one was written next to the catalog state "
            "(its revocations lost); `aira trust reset-state` starts over",
        ),
        (
            "TRUST_STORE_MISMATCH",
            "the trust store is not the one the catalog state beside it last wrote (restored "
            "from a backup, edited by hand, or the state copied from another home); put the "
            "pair back, or `aira trust reset-state`",
        ),
        (
            "KEY_INVALID",
            "a key cannot be read or decoded (missing file, not a raw 32-byte Ed25519 key), "
            "or is degenerate (a small-order or non-canonical point, off the curve)",
        ),
    ),
    *_phase(
        "lint",
        ("LINT_FIELD_MISSING", "a required field is missing"),
        ("LINT_FIELD_UNKNOWN", "a field the contract does not define (likely a typo)"),
        ("LINT_FIELD_INVALID", "a field has the wrong type or value"),
        ("LINT_CAPABILITY_ID_INVALID", "capability ids have the form cap:<dotted.name>@<major>"),
        ("LINT_CAPABILITY_DUPLICATE", "the same capability id twice in one package"),
        ("LINT_KIND_UNKNOWN", "kind is not one of the seven kinds"),
        ("LINT_TARGET_NOT_EXACTLY_ONE", "exactly one execution target must be declared"),
        ("LINT_TARGET_REF_INVALID", "execution targets are <dotted.name>@<MAJOR.MINOR.PATCH>"),
        ("LINT_TARGET_KIND_MISMATCH", "the execution target does not fit the kind"),
        ("LINT_TAXONOMY_UNKNOWN", "taxonomy.primary is not a path of the taxonomy"),
        ("LINT_VERSION_INVALID", "versions are exact MAJOR.MINOR.PATCH"),
        ("LINT_SCHEMA_INVALID", "a schema is not a valid Draft 2020-12 JSON Schema"),
        ("LINT_SCHEMA_REF_UNRESOLVED", "a schemaRef names no schema of the package"),
        ("LINT_SCHEMA_REF_TARGET_MISMATCH", "an amir:// schemaRef belongs to another target"),
        ("LINT_INPUT_SCHEMA_NOT_OBJECT", "an input schema must describe an object"),
        ("LINT_DEFAULT_UNKNOWN_INPUT", "a canonical default for an input the schema lacks"),
        ("LINT_DEFAULT_ON_REQUIRED", "canonical defaults are for optional inputs"),
        ("LINT_DEFAULT_INVALID", "a canonical default fails its input schema"),
        (
            "LINT_DEFAULT_SCHEMA_MISMATCH",
            "the schema's own default differs from the canonical default",
        ),
        (
            "LINT_DEFAULT_BINDING_NOT_REQUIRED",
            "defaultBinding is for required inputs of the schema",
        ),
        ("LINT_DEFAULT_BINDING_INVALID", "a defaultBinding value fails its input schema"),
        (
            "LINT_DEFAULT_BINDING_CONFLICT",
            "defaultBinding disagrees with defaults, the schema's "
            "default or the shape an input example uses",
        ),
        ("LINT_EXAMPLE_SCHEMA_INVALID", "an input example fails the canonical input schema"),
        ("LINT_INPUT_EXAMPLE_MISSING", "required inputs but no complete, copyable input example"),
        ("LINT_INTENT_EXAMPLES_MISSING", "a profile needs at least one intent example"),
        ("LINT_SUMMARY_TOO_LONG", "summaries are short (at most 280 characters)"),
        ("LINT_ALIAS_DUPLICATE", "the same alias twice in one profile"),
        ("LINT_PREDICATE_UNREGISTERED", "predicates must be registered predicate ids"),
        ("LINT_PREDICATE_ARGS_INVALID", "predicate arguments fail the predicate's schema"),
        ("LINT_PREDICATE_INPUT_UNKNOWN", "a predicate refers to an input the schema lacks"),
        ("LINT_EFFECTS_MISSING", "effects must be declared"),
        ("LINT_EFFECTS_CONFLICT", "readOnly cannot be combined with other effects"),
        ("LINT_EFFECTS_KIND_MISMATCH", "effects contradict the kind"),
        ("LINT_RISK_INCONSISTENT", "risk contradicts the declared effects"),
        ("LINT_PURITY_INCONSISTENT", "a pure capability cannot have external side effects"),
        ("LINT_DIAGNOSTIC_CODE_INVALID", "diagnostic codes are UPPER_SNAKE_CASE"),
        ("LINT_DIAGNOSTIC_DUPLICATE", "the same diagnostic code twice"),
        ("LINT_FAILURE_MODE_UNDECLARED", "guidance explains an undeclared diagnostic"),
        ("LINT_RELATION_UNKNOWN", "relation names are the nine relations of §5.3"),
        (
            "LINT_UNKNOWN_RELATION_TARGET",
            "a relation names a capability that is not in the catalog",
        ),
        ("LINT_RELATION_TARGET_INVALID", "a relation target has the wrong form"),
        ("LINT_RELATION_SELF", "a capability relates to itself"),
        (
            "LINT_REPAIR_DIAGNOSTIC_MISSING",
            "a repair names no diagnostic code in relations.repairsDiagnostic",
        ),
        (
            "LINT_REPAIR_DIAGNOSTIC_UNDECLARED",
            "a repair's template appliesTo a capability of the package that declares none of "
            "the codes the repair names",
        ),
        (
            "LINT_REPAIR_TEMPLATE_INVALID",
            "a repair's patchTemplate is missing or an expression of it is refused by the "
            "expression language (its EXPRESSION_* code in the message); or a non-repair "
            "carries one",
        ),
        ("LINT_TRUST_SELF_ASSERTED", "trust is filled in by the catalog, never by the manifest"),
        (
            "LINT_WORKFLOW_DEFINITION_MISSING",
            "a workflow descriptor whose workflowRef has no definition in the package's workflows",
        ),
        (
            "LINT_WORKFLOW_CAPABILITY_UNKNOWN",
            "a workflow template step names a capability neither in the package nor the catalog",
        ),
        (
            "LINT_WORKFLOW_STEP_REFERENCE",
            "a workflow template refers to a template step that is not an earlier one "
            "(step, $step, dependsOn, result) or repeats a template step id",
        ),
        (
            "LINT_WORKFLOW_TYPE_MISMATCH",
            "a workflow template feeds a Shape input from a template step that makes no such shape",
        ),
        (
            "LINT_WORKFLOW_EXPRESSION_INVALID",
            "a workflow expression is refused by the expression language (its EXPRESSION_* code "
            "in the message), such as a name that is neither a parameter nor a table",
        ),
        (
            "LINT_WORKFLOW_TEMPLATE_INVALID",
            "a workflow definition no descriptor uses, a nested workflow, or a name that is both "
            "a parameter and a table",
        ),
    ),
    *_phase(
        "conformance",
        ("CONFORMANCE_TARGET_UNRESOLVED", "no registered implementation provides the target"),
        ("CONFORMANCE_VERSION_MISMATCH", "only other versions of the target are implemented"),
        ("CONFORMANCE_EXAMPLE_REJECTED", "the implementation rejects an input example"),
        ("CONFORMANCE_DEFAULT_BINDING_REJECTED", "the implementation rejects the defaultBinding"),
        (
            "CONFORMANCE_UNDECLARED_DIAGNOSTIC",
            "the implementation can raise a code the descriptor does not declare",
        ),
        ("CONFORMANCE_CHECK_CRASHED", "the implementation's check raised instead of answering"),
    ),
    *_phase(
        "catalog",
        (
            "CATALOG_PACKAGE_NAME_MISMATCH",
            "a package registered under another name than its manifest's",
        ),
        (
            "CATALOG_ROLLBACK",
            "a package version older than the one admitted before from the same publisher",
        ),
        (
            "CATALOG_VERSION_CONTENT_CHANGED",
            "a version admitted before is back with other "
            "content (a changed manifest needs a new version)",
        ),
        (
            "CATALOG_LINT_FAILED",
            "a package quarantined because lint found errors",
            "only a constant in catalog/catalog.py: a quarantined package lists lint's own "
            "findings; drop both when catalog.py is next changed",
        ),
        (
            "CATALOG_CONFORMANCE_FAILED",
            "a package quarantined because conformance failed",
            "only a constant in catalog/catalog.py: a quarantined package lists the failed "
            "checks' own diagnostics",
        ),
        (
            "CATALOG_IMPLEMENTATIONS_FAILED",
            "a kernel's implementations() raised; its targets count as unimplemented",
        ),
        (
            "CATALOG_CHECK_CRASHED",
            "checking a package raised (a bug in aira); only that package is quarantined",
        ),
        ("CATALOG_DUPLICATE_CAPABILITY", "a capability id declared by more than one package"),
        (
            "CATALOG_STATE_UNAVAILABLE",
            "the catalog state in AIRA_HOME cannot be opened, or a newer aira wrote it",
        ),
        (
            "CATALOG_STATE_MISSING",
            "the catalog state is missing or empty next to a trust store (rollback protection "
            "lost); `aira trust reset-state` starts a new one",
        ),
    ),
    *_phase(
        "discovery",
        (
            "EMBEDDER_UNKNOWN",
            "`$AIRA_EMBEDDER` names no embedder (auto, hashing or the model's name)",
        ),
        (
            "EMBEDDER_UNAVAILABLE",
            "`$AIRA_EMBEDDER` names the sentence-embedding model and the embeddings extra is not "
            "installed",
        ),
        (
            "DESCRIBE_CAPABILITY_UNKNOWN",
            "catalog.describe names a capability that is not in the production catalog",
        ),
        ("DESCRIBE_LEVEL_INVALID", "catalog.describe asks for a level it does not serve"),
        (
            "DESCRIBE_TOO_LARGE",
            "a contract does not fit the describe size limit; refused, never cut",
        ),
        (
            "BENCH_QUERIES_INVALID",
            "a discovery benchmark file cannot be read or is not a benchmark",
        ),
        ("BENCH_CATALOG_MISSING", "the benchmark searches a package the production catalog lacks"),
        (
            "BENCH_FAKE_UNAVAILABLE",
            "the providers benchmark's fake provider (aira_core.testing) cannot be imported: "
            "pytest is missing, it comes with aira-core[test]",
        ),
    ),
    *_phase(
        "eval",
        (
            "EVAL_SUITE_INVALID",
            "an eval suite file is not an aira.eval-suite/1 suite (the first problem and "
            "where it is), or names a task it does not have",
        ),
        ("EVAL_SUITE_UNKNOWN", "no bundled eval suite by that name and no file at that path"),
    ),
    *_phase(
        "store",
        (
            "STORE_UNAVAILABLE",
            "no store at the path (run `aira model init`), or it cannot be "
            "opened: locked, closed, written by a newer schema",
        ),
        (
            "STORE_CORRUPT",
            "the file is not a valid model store (an empty file included), or a row it reads "
            "is damaged (fails its digest or content address); it is left as it is",
        ),
        ("STORE_ALREADY_INITIALISED", "init on a store whose main branch exists"),
        (
            "STORE_BRANCH_INVALID",
            "a branch name other than main or task/<id>, or branching to main",
        ),
        ("STORE_BRANCH_UNKNOWN", "the store has no branch of that name"),
        ("STORE_BRANCH_EXISTS", "creating a branch that exists"),
        ("STORE_REVISION_UNKNOWN", "the store has no revision of that id"),
        ("STORE_REVISION_NOT_IN_BRANCH", "reverting to a revision outside the branch's history"),
        (
            "STORE_PUBLISH_NOT_FAST_FORWARD",
            "publishing a task branch that does not descend "
            "from main's head (branch again and redo the work)",
        ),
        (
            "STORE_NO_CHANGE",
            "a commit or revert that leaves the document as it is: history only records changes",
        ),
        ("STORE_DOCUMENT_INVALID", "a document to store is not a canonical JSON object"),
        ("STORE_ARGUMENT_INVALID", "a commit message or meta of the wrong type"),
        (
            "STEP_STALE_REVISION",
            "the branch head is not the revision the write was based on "
            "(compare-and-swap); re-read and redo against the new head",
        ),
    ),
    *_phase(
        "patch",
        (
            "PATCH_INVALID",
            "a patch that is not a list of valid operations, or a relabel that "
            "drops or breaks a label",
        ),
        ("PATCH_DUPLICATE_ID", "adding an entity whose id exists"),
        ("PATCH_ENTITY_UNKNOWN", "an operation names an entity that does not exist"),
        ("PATCH_STILL_REFERENCED", "removing an entity other entities still refer to"),
        (
            "AMIR_DOCUMENT_INVALID",
            "a whole document (`aira model init --from`, a stored revision) "
            "is not a valid AMIR document",
        ),
        ("AMIR_DUPLICATE_ID", "an entity id is used twice in a document"),
        (
            "AMIR_CREDENTIAL_IN_ID",
            "an entity id or a reference to one holds a credential: ids are kept and shown "
            "for good and others refer to them, so it is refused rather than redacted",
        ),
        (
            "AMIR_DANGLING_REFERENCE",
            "an entity refers to an id that is not in the block it points into",
        ),
        ("AMIR_CYCLE", "nodes depend on each other in a cycle"),
        ("AMIR_OPERATION_UNKNOWN", "a node uses an operation no admitted capability provides"),
        ("AMIR_INPUT_MISSING", "a node lacks a required input of its operation"),
        ("AMIR_INPUT_UNKNOWN", "a node has an input its operation does not define"),
        (
            "AMIR_TYPE_MISMATCH",
            "a value or parameter of the wrong type for its input or "
            "parameter (a Bool or String given a unit)",
        ),
        ("UNIT_MISMATCH", "a unit of another dimension (e.g. deg for a Length)"),
        ("UNIT_UNKNOWN", "a unit name the model does not know"),
        ("PARAMETER_OUT_OF_RANGE", "a parameter value outside its bounds, or too large"),
    ),
    *_phase(
        "read",
        ("ALIAS_UNKNOWN", "neither an alias nor an entity id of the revision read"),
        (
            "SELECT_PATH_INVALID",
            "a select path that is not a list of strings starting with a block name",
        ),
        ("SELECT_RANGE_INVALID", "a page offset, limit or byte limit out of range"),
        ("PAGE_ITEM_TOO_LARGE", "one entity is larger than the page byte limit allows"),
    ),
    *_phase(
        "plan",
        ("PLAN_CAPABILITY_UNKNOWN", "a step's capability is not in the production catalog"),
        (
            "PLAN_CATALOG_STALE",
            "the plan was made against another catalog; describe the capabilities again",
        ),
        ("PLAN_GRANT_MISMATCH", "the plan is bound to another Session Grant than the session's"),
        (
            "PLAN_STEP_KIND_UNSUPPORTED",
            "a step whose kind is not run inside a plan, or a "
            "patch template this runtime does not know",
        ),
        ("PLAN_ARGS_INVALID", "a step's arguments break its capability's input schema"),
        (
            "WORKFLOW_DEFINITION_MISSING",
            "a workflow step whose capability's definition is not in the catalog",
        ),
        (
            "WORKFLOW_TEMPLATE_INVALID",
            "a workflow cannot expand: a template step reference, an expanded step id or label "
            "that is not valid",
        ),
        (
            "WORKFLOW_EXPANSION_TOO_LARGE",
            "a plan with more than 256 workflow steps, or more than 4096 steps once expanded",
        ),
        (
            "PLAN_REFERENCE_UNRESOLVED",
            "an argument names no parameter, body or assertion of "
            "the base revision or an earlier step",
        ),
        (
            "PLAN_STEP_REFERENCE_INVALID",
            'a {"step": id} argument that is not an earlier step making what the input takes',
        ),
        (
            "PLAN_BODY_STILL_REFERENCED",
            "a step takes a body out of the model (a boolean consuming its tool, "
            "cap:body.remove@1) that an assertion, or a feature of the base revision selecting "
            "on it, still refers to (the plan's own features follow the node instead); keep it "
            "(keepTool: true) or remove the assertion first",
        ),
        (
            "PLAN_CONSUMES_TARGET",
            "a step would consume the body it writes its result to (a boolean whose tool is "
            "its target)",
        ),
        ("PLAN_PRECONDITION_UNMET", "a known precondition of a capability does not hold"),
        ("PLAN_SCOPE_DENIED", "the grant does not cover the branch written, or the revision read"),
        ("GRANT_REVOKED", "the Session Grant is revoked"),
        ("GRANT_EXPIRED", "the Session Grant has expired"),
        ("PLAN_CLASS_DENIED", "the grant does not allow using or writing this taxonomy class"),
        (
            "GRANT_PERMISSION_DENIED",
            "a destructive or exporting capability the grant does not permit",
        ),
        (
            "PLAN_APPROVAL_REQUIRED",
            "the risk is above what the grant commits without the user's approval",
        ),
        ("PLAN_STEP_DUPLICATE", "a step id used twice"),
        ("PLAN_DEPENDENCY_UNKNOWN", "a step depends on an unknown step"),
        ("PLAN_CYCLE", "steps depend on each other in a cycle"),
        ("PLAN_BUDGET_EXCEEDED", "the plan may take more kernel time than the grant allows"),
        (
            "PLAN_CONVERSION_IMPLICIT",
            "a capability needs a representation the target lacks; add an explicit conversion step",
        ),
        ("PLAN_EFFECT_PROHIBITED", "a step's effect is one the Intent Frame prohibits"),
        ("PLAN_OUT_OF_SCOPE", "a step changes a body outside the Intent Frame's scope"),
        ("PLAN_ASSERTION_UNSUPPORTED", "no admitted validator implements an acceptance assertion"),
        (
            "SELECTOR_PRECEDENCE_AMBIGUOUS",
            "a warning: a selector's `not` is followed by `and`/`or`/`exc` at its level; "
            "CadQuery's `not` binds loosest, so `A and not B and C` is `A and not (B and C)`",
        ),
    ),
    *_phase(
        "expression",
        ("EXPRESSION_SYNTAX", "an expression that does not parse, or is not a string"),
        ("EXPRESSION_TOO_LONG", "an expression over 1000 characters"),
        ("EXPRESSION_TOO_DEEP", "an expression nested deeper than 32 levels"),
        (
            "EXPRESSION_TOO_COSTLY",
            "expressions over 20,000 evaluation steps in one workflow step's expansion or one "
            "repair's template, or a list or string over 1000 items",
        ),
        (
            "EXPRESSION_UNSUPPORTED",
            "an expression outside the language: a method, an attribute starting with _, a call "
            "of anything but min max abs round floor ceil sqrt len range value, `is` other than "
            "`is None`, lambdas, assignments …",
        ),
        (
            "EXPRESSION_NAME_UNKNOWN",
            "an expression reads a name its context does not have (a workflow: its parameters "
            "and tables; a repair: args, expected, actual)",
        ),
        (
            "EXPRESSION_TYPE",
            "an expression applies an operator or function to the wrong types, a condition that "
            "is no boolean, or a result that is no plain JSON",
        ),
        ("EXPRESSION_DIVISION_BY_ZERO", "an expression divides by zero"),
        (
            "EXPRESSION_NOT_FINITE",
            "an expression's number is infinite, not a number, or an integer of 2**53 or more",
        ),
        (
            "EXPRESSION_KEY_UNKNOWN",
            "an object (a table, a row, a JSON value) has no such key, or a list no such index",
        ),
    ),
    *_phase(
        "runtime",
        (
            "QUERY_UNKNOWN",
            "a query (model.read, an inspect act, `aira query`) names no admitted query capability",
        ),
        # The rejections of the Meta-operation Contract: runtime/contract.py's
        # REJECTION_SUMMARIES are these meanings.
        ("DISCOVERY_REQUIRED", "A write needs a full L2 contract in the trace first (§7.1, §9.4)."),
        ("CANDIDATE_REQUIRED", "No open candidate: propose a patch first."),
        ("PREVIEW_REQUIRED", "The current candidate has not been previewed."),
        ("VALIDATION_REQUIRED", "The current candidate has no validation token."),
        (
            "NOTHING_TO_REVERT",
            "The task head is not a revision this task committed (or a "
            "candidate is open on top of it).",
        ),
        ("TASK_TERMINATED", "The task reached a terminal state; start a new task."),
        ("DUPLICATE_REQUEST_ID", "The request id was already used in this task or this batch."),
        ("UNKNOWN_OPERATION", "not one of the nine meta-operations"),
        ("UNKNOWN_STATE", "not one of the nine runtime states"),
        ("REPAIR_REQUIRES_DIAGNOSTIC", "a repair round is entered without a Diagnostic"),
        (
            "REPAIR_UNKNOWN",
            "a repair (model.read `repair`) names no admitted repair capability with a template",
        ),
        (
            "REPAIR_NOT_APPLICABLE",
            "the repair does not fit: not for that code, the refused plan or its step does not "
            "carry the diagnostic, the step's capability is not one it repairs, or its `when` "
            "fails",
        ),
        (
            "REPAIR_NO_REFUSED_PLAN",
            "a repair (model.read `repair`, the step host's repair act) asked for before the "
            "task had any plan refused: there is nothing to make a candidate of",
        ),
        (
            "REPAIR_TEMPLATE_FAILED",
            "evaluating the repair's template failed: its EXPRESSION_* code and message in the "
            "message (a missing key, a non-number, division by zero, a value that is no JSON), "
            "or a when that is no boolean",
        ),
        ("CORPUS_NOT_FOUND", "no shared contract corpus file of that name"),
        (
            "DESCRIBE_NOT_VISIBLE",
            "catalog.describe of a capability no search, capsule or "
            "manifest of this task has shown",
        ),
        (
            "BATCH_DEFERRED",
            "at most one effect runs per turn: the call is deferred, its request id stays usable",
        ),
        (
            "ASSERTION_FAILED",
            "an assertion of the document fails on the kernel; the write is refused",
        ),
        (
            "ASSERTION_FAILS_ON_RESULT",
            "a warning: a validator step's assertion held at its position in the plan but fails "
            "on the plan's result; the plan commits, and every later commit re-checks the "
            "assertion on its body as it is then (and is refused until it holds)",
        ),
    ),
    *_phase(
        "terminal",
        ("USER_CANCELLED", "the user cancelled the task (cancelled)"),
        ("AUTHORITY_FAILED", "an authority (kernel, store, grant) failed unrecoverably (failed)"),
        (
            "COMPLETION_EVIDENCE_COMPLETE",
            "committed and read back after the last effect (completed)",
        ),
        ("BUDGET_EXHAUSTED", "a budget of the Session Grant or task ran out (budgetExhausted)"),
        ("REPAIR_CAP_REACHED", "the repair rounds are used up (cannotProceed)"),
        ("NO_LEGAL_ACTION", "no legal meta-operation is left (cannotProceed)"),
        (
            "COMPLETION_EVIDENCE_MISSING",
            "completion claimed without the runtime's evidence; the task continues",
        ),
        ("CONTINUE", "no terminal rule applies; the task continues"),
    ),
    *_phase(
        "kernel",
        (
            "KERNEL_UNAVAILABLE",
            "no kernel of that name is installed, or more than one and none named, or a "
            "write whose document has assertions has no kernel to re-check them on (a kernel "
            "also answers it when its worker cannot start, or a warm worker's directory is "
            "not the user's alone)",
        ),
        (
            "KERNEL_FAILED",
            "a kernel raised (anything, BaseException included), answered with the wrong type "
            "(a query: not JSON data), or left out the result of a body (a kernel bug)",
        ),
        (
            "KERNEL_TIMEOUT",
            "a kernel call did not answer within its deadline (AIRA_KERNEL_TIMEOUT), or the "
            "kernel is still running a call that missed it",
        ),
        (
            "VALIDATOR_FAILED",
            "a registered validator (not a kernel) raised, answered something other than an "
            "outcome of its assertion with JSON measured values, or failed it with a code it "
            "does not declare; the write is refused",
        ),
        (
            "VALIDATOR_TIMEOUT",
            "a registered validator did not answer within the deadline (AIRA_KERNEL_TIMEOUT), "
            "or is still running a call that missed it; the write is refused",
        ),
        (
            "VALIDATOR_VIEW_READONLY",
            "a registered validator tried to write to its read-only model view (set or delete "
            "an attribute, ask it for something other than a query.* ref, use it after its "
            "call), even if it caught the refusal; the write is refused",
        ),
        (
            "EXPORT_TOLERANCE_INVALID",
            "an export's mesh tolerance is not a finite number from 0.001 to 10 mm, or its "
            "angular tolerance not one from 3 to 60 degrees; no kernel is called, nothing is "
            "written",
        ),
        (
            "EXPORT_TOLERANCE_UNSUPPORTED",
            "mesh tolerances were given for a format that is no mesh (step, svg), or to a "
            "kernel whose export takes none (written against the older protocol); nothing is "
            "written",
        ),
    ),
    *_phase(
        "step",
        ("STEP_DECISION_NOT_JSON", "a model's decision is not JSON text"),
        ("STEP_DECISION_NOT_OBJECT", 'a decision is not one JSON object {"act": …}'),
        (
            "STEP_DECISION_ACT_UNKNOWN",
            "an act the step host does not know, or one a batch cannot hold",
        ),
        (
            "STEP_DECISION_FIELD_INVALID",
            "a decision's fields break its act's schema (a JSON pointer names the act)",
        ),
        (
            "STEP_DECISION_ALIAS_UNKNOWN",
            "a decision names an alias that is not a legal alias "
            "of the current revision, nor one an earlier step of its plan creates",
        ),
        ("STEP_PAGE_UNKNOWN", "pinning or dropping a page that is not in the working set"),
        ("STEP_LEDGER_INVALID", "a stored step ledger is not one to_wire wrote"),
        (
            "STEP_CAPSULE_OVER_BUDGET",
            "the capsule does not fit its token budget even with every unpinned page released",
        ),
        ("STEP_TIER_UNKNOWN", "no context tier of that name"),
        (
            "SCRIPT_INVALID",
            "a decision script cannot be read or is not an aira.decision-script/1 document",
        ),
        (
            "TRAJECTORY_EXISTS",
            "a new run's trajectory path exists (a file or symlink, empty or not): a run never "
            "writes into another file; `--force` replaces it with a new one",
        ),
        ("TRAJECTORY_INVALID", "a trajectory file cannot be read or is not a valid trajectory"),
        (
            "RUN_STORE_EXISTS",
            "a new run needs a new store; the store file exists (or, given with --store, a "
            "task that brings its own starting document was asked to work in it)",
        ),
        (
            "RUN_TASK_INVALID",
            "aira run was given no task, two tasks, a blank or over-long task in words, a task "
            "in words without --provider, or provider flags without --provider",
        ),
        (
            "RUN_SOURCE_INVALID",
            "no model was named and the provider lists none, or a trajectory's header names no "
            "usable source to resume with",
        ),
        ("RUN_STORE_MISSING", "resuming a run whose store does not exist"),
        ("RUN_SCRIPT_MISMATCH", "the trajectory is a run of another script or task"),
        ("RUN_ALREADY_ENDED", "resuming a run whose task already ended"),
        (
            "RUN_RESUME_MISMATCH",
            "the trajectory does not match the task branch it resumes: a step after the one "
            "that ended the task, a commit it cannot have made, or one its earlier records "
            "(discovery) do not allow",
        ),
    ),
    *_phase(
        "report",
        (
            "REPORT_RUN_MISSING",
            "aira report was given a path that does not exist or is no directory",
        ),
        (
            "REPORT_NOT_A_RUN",
            "the directory holds no trajectory.jsonl: it is not the directory of a run",
        ),
        (
            "REPORT_TRAJECTORY_INVALID",
            "the run's trajectory cannot be read or is not a valid trajectory (a torn last "
            "line, from a killed run, is dropped, not refused); nothing is written",
        ),
        (
            "REPORT_STORE_INVALID",
            "the run's store cannot be read, or lacks a revision its trajectory names; "
            "nothing is written",
        ),
        (
            "REPORT_MESH_INVALID",
            "the run's display mesh (NAME.mesh.json) is not an aira.mesh/1 document of whole, "
            "finite triangles; nothing is written",
        ),
        (
            "REPORT_PICTURE_EMPTY",
            "the part's picture has nothing to draw: the revision has no body yet, or the "
            "kernel exports no display mesh, or its mesh holds no triangle with an area",
        ),
    ),
    *_phase(
        "provider",
        (
            "PROVIDER_CONFIG_INVALID",
            "providers.toml in AIRA_HOME is not valid TOML or not valid provider settings "
            "(the message names the key path, never a value); or a provider is built with "
            "settings it cannot use",
        ),
        (
            "PROVIDER_REQUEST_INVALID",
            "a provider call cannot be prepared (an unknown model, a body that is not JSON); "
            "nothing was sent",
        ),
        (
            "PROVIDER_KEY_MISSING",
            "the provider needs an API key and none is set (api_key_env names an unset "
            "variable); nothing was sent",
        ),
        (
            "PROVIDER_CONNECT_FAILED",
            "no connection to the provider (refused, DNS, connect or pool timeout, an "
            "unsupported URL); the request was not sent: not_accepted",
        ),
        (
            "PROVIDER_TIMEOUT",
            "the provider stopped answering after the request was sent (read or write "
            "timeout): acceptance unknown",
        ),
        (
            "PROVIDER_CONNECTION_LOST",
            "the connection broke after the request was sent (read/write error, the server "
            "closed it or sent no valid response): acceptance unknown",
        ),
        (
            "PROVIDER_DEADLINE",
            "the call's overall deadline passed (keep-alive lines do not extend it): "
            "acceptance unknown, or not_accepted when it passed before sending",
        ),
        (
            "PROVIDER_SEND_FAILED",
            "an unexpected failure while calling the provider: acceptance unknown",
        ),
        (
            "PROVIDER_REFUSED",
            "the provider answered with a status its documentation says is a refusal "
            "before processing (its acceptance table): not_accepted",
        ),
        (
            "PROVIDER_AUTH_FAILED",
            "the server refused the credentials (HTTP 401 without a documented meaning): "
            "not_accepted (HTTP's own meaning: not applied); the message says where the key "
            "came from",
        ),
        (
            "PROVIDER_HTTP_STATUS",
            "the provider answered with a status its documentation does not call a refusal "
            "(500, 503, 404 …): acceptance unknown",
        ),
        (
            "PROVIDER_BODY_INVALID",
            "the provider answered 2xx with a body that is not a JSON object, or is over "
            "the size cap: accepted, but nothing was delivered",
        ),
        (
            "PROVIDER_REPLY_INVALID",
            "the provider's reply holds no decision (no choices, no message, blank content, "
            "no aira_step call): accepted",
        ),
        (
            "PROVIDER_UNSUPPORTED",
            "the provider has no such path (e.g. submit/poll on a provider without jobs); "
            "nothing was sent",
        ),
    ),
    *_phase(
        "gateway",
        (
            "LEDGER_UNAVAILABLE",
            "the attempt ledger cannot be created, opened or written (a read-only or missing "
            "location, a directory, a lock held too long, a closed ledger), or was written "
            "by a newer Aira",
        ),
        (
            "LEDGER_CORRUPT",
            "the attempt ledger is damaged (integrity check, schema, a row that cannot be "
            "read, an empty file); the file is left as it is",
        ),
        (
            "LEDGER_NOT_A_LEDGER",
            "the file at the ledger's path is not an attempt ledger (not SQLite, or another "
            "application's database); the file is left as it is",
        ),
        (
            "LEDGER_TRANSITION_INVALID",
            "a change the task/attempt facts forbid (a final acceptance, outcome, delivery or "
            "cancel changed; a second attempt after one that was not not_accepted; ready "
            "without deliver): a programming error, nothing is written",
        ),
        (
            "LEDGER_ARGUMENT_INVALID",
            "a value for the ledger outside its form: a fact outside the spec's enums, an "
            "unknown stage, an error or reply of the wrong shape, a request given instead of "
            "its digest",
        ),
        ("LEDGER_TASK_UNKNOWN", "the attempt ledger has no task of that id"),
        ("LEDGER_ATTEMPT_UNKNOWN", "the attempt ledger has no attempt of that id"),
        (
            "GATEWAY_RETRY_UNCONFIRMED",
            "an informed retry asked for without --informed: the step may be charged again",
        ),
        ("GATEWAY_NO_ROUTE", "a gateway was given no providerId::modelId to submit to"),
        ("GATEWAY_ROUTE_INVALID", "a route that is not written providerId::modelId"),
        ("GATEWAY_PROVIDER_UNKNOWN", "a route names a provider no plugin registered"),
        ("GATEWAY_MODEL_UNKNOWN", "a route names a model its provider does not serve"),
        ("GATEWAY_TRANSPORT_UNKNOWN", "a decision transport neither built in nor registered"),
        (
            "GATEWAY_ALL_REFUSED",
            "every configured provider refused the step before processing it (not_accepted): "
            "nothing was charged; fix the cause (key, balance, rate) and resume",
        ),
        (
            "ATTEMPT_UNKNOWN",
            "a provider may have processed the step but its answer was lost (timeout, reset, "
            "a 5xx, the process ended mid-call): not resubmitted; an informed retry "
            "(aira tasks retry) is needed",
        ),
        (
            "ATTEMPT_UNDELIVERED",
            "a provider answered the step but the reply could not be read or kept; a job's "
            "result is fetched again on resume, a synchronous answer needs an informed retry",
        ),
        (
            "ATTEMPT_WATCH_EXHAUSTED",
            "an accepted job could not be polled, several times in a row: it is not failed "
            "and not resubmitted; resuming watches it again",
        ),
        ("ATTEMPT_FAILED", "the provider says the accepted job failed; not resubmitted"),
        ("ATTEMPT_CANCELED", "the provider says the accepted job was canceled"),
        ("ATTEMPT_ENDED", "a cancel asked of an attempt whose outcome is already final"),
        (
            "PROVIDER_PLUGIN_FAILED",
            "a provider plugin raised something other than a ProviderError: classified by "
            "the stage it was in (nothing sent while preparing, unknown after)",
        ),
    ),
    *_phase(
        "mcp",
        (
            "MCP_TASK_UNKNOWN",
            "a tool call or resource names no task open on this server (tasks live as long "
            "as the server process; their revisions stay in the store): task_open makes one",
        ),
        (
            "MCP_TASK_LIMIT",
            "task_open on a server whose open tasks are all live and recently used",
        ),
        ("MCP_TOOL_UNKNOWN", "a tool name that is none of the eleven, nor a binding ever made"),
        (
            "MCP_CAPABILITY_UNKNOWN",
            "a warning on task_open: a capability id in `capabilities` that the catalog does "
            "not hold (the others are shown and count as discovered); closest ids named",
        ),
        (
            "MCP_RESOURCE_TOO_LARGE",
            "an exported part larger than one resource read carries within the MCP SDK "
            "client's default limits: read it in pieces (?chunk=N) or with a coarser "
            "tolerance",
        ),
        (
            "MCP_RESOURCE_UNKNOWN",
            "a resource URI that names nothing readable: no such resource, a revision the "
            "task may not read, an unknown export format, or a head with no body to export",
        ),
        (
            "BOUND_CAPABILITY_STALE",
            "a scoped binding whose snapshot no longer holds (the task moved on or ended, "
            "the catalog, runtime or grant changed, its time to live ran out): never run "
            "against the latest; describe the capability again with bind=true",
        ),
        (
            "MCP_BIND_REFUSED",
            "a warning on catalog.describe with bind=true for a capability that is not a "
            "writing one (only those are bound as tools); the description stands",
        ),
        ("MCP_BIND_LIMIT", "a warning: the task already holds the most live bindings (20)"),
        (
            "MCP_CALL_FAILED",
            "a tool call failed inside Aira itself (a bug): reported as an error result "
            "with the exception's type only; the task and its revisions are unchanged",
        ),
        (
            "MCP_HOST_INVALID",
            "aira mcp serve: a --host that is no address here, or --host or --port without --http",
        ),
        ("MCP_PORT_IN_USE", "aira mcp serve --http: the port is taken"),
    ),
    *_phase(
        "continuity",
        (
            "CONTRACT_INVALID",
            "a TaskContractLite, contract envelope or provider document breaks its wire "
            "schema or a rule the Guard's code adds (a string blank after trim, an "
            "updated_at that is no RFC 3339 date-time, a standalone envelope as input); the "
            "pointer names the value",
        ),
        (
            "CONTRACT_RULE_UNSUPPORTED",
            "a must_not or authorization entry looks like a structured rule but is none the "
            "Guard reads: a near-miss prefix (actions:, command_prefix: …), a rule without a "
            "value, or an action: tag outside its list",
        ),
        (
            "CONTRACT_PLACEHOLDER",
            "a contract still holds one of the Guard's generated init placeholders "
            "(Replace with …)",
        ),
        (
            "CONTRACT_HASH_MISMATCH",
            "a snapshot_sha256 is not the Guard's projection hash of the projection it "
            "travels with",
        ),
        (
            "CONTRACT_OUTSIDE_DOMAIN",
            "a value given to the projection hash is outside what it hashes exactly as the "
            "Guard does: a number, boolean or null, a lone surrogate, an array-index-like "
            "key, or a top level that is not an object",
        ),
        (
            "CONTRACT_VERSION_ROLLBACK",
            "a warning: the intent contract's version is lower than the last one verified "
            "for its contract_ref; the intent adapter stays on that one (stale) or unbound",
        ),
        (
            "CONTRACT_VERSION_COLLISION",
            "a warning: the intent contract has the version last verified for its contract_ref "
            "but another projection hash (a version's content never changes); the intent "
            "adapter stays on the verified one (stale)",
        ),
        (
            "CONTRACT_LEDGER_INVALID",
            "a warning: the intent adapter's ledger of verified contract versions "
            "(intent-bindings.json) cannot be read or is no ledger; nothing is bound, so no "
            "rollback goes unseen (move the file away to start a new ledger)",
        ),
        (
            "WIRE_RECORD_INVALID",
            "a Continuity snapshot, Guard event, evidence, receipt, receipt export or "
            "shadow-pilot summary breaks its wire schema or a rule its upstream reader "
            "enforces; the pointer names the value",
        ),
    ),
    *_phase(
        "integration",
        (
            "INTEGRATION_FAILED",
            "a warning: an Intent / Continuity / Guard adapter raised, did not answer within "
            "its bound or answered with something that is not its typed value (or has no role "
            "or method of its role); it is absent for that call and the run goes on",
        ),
        (
            "INTEGRATION_ROLE_CONFLICT",
            "a run was given two adapters of one role (at most one intent owner, one "
            "continuity adapter, one guard); refused before the run starts",
        ),
        (
            "GUARD_BLOCKED",
            "the guard adapter blocked an effect (a meta-operation or an export); nothing ran "
            "and nothing was written",
        ),
        (
            "GUARD_APPROVAL_REQUIRED",
            "the guard adapter asks the user to approve this one call; nothing ran (the host "
            "approves it with Task.approve_call, and only that call)",
        ),
        (
            "GUARD_CONTINUE_VERIFICATION",
            "the guard adapter asks for verification before the task may be done (at most "
            "twice per contract version; then the runtime decides alone)",
        ),
    ),
)

CODES: dict[str, Code] = {c.code: c for c in _CODES}
"""Every stable code of the core, by code."""

if len(CODES) != len(_CODES):  # a code registered twice would silently keep its last entry
    raise AssertionError("a code is registered twice in aira_core.codes")


def meanings(phase: str) -> dict[str, str]:
    """``{code: meaning}`` of one phase, in registry order (e.g. lint's rule table)."""
    return {c.code: c.meaning for c in _CODES if c.phase == phase}


# -- docs/codes.md -----------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def package_codes(manifest: Mapping[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    """``{code: (capabilities declaring it, explanations)}`` from a capability package
    manifest: the codes each descriptor declares in ``diagnostics``, explained by its
    ``guidance.failureModes``."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for d in manifest.get("descriptors", []):
        for code in d.get("diagnostics", []):
            out.setdefault(code, ([], []))[0].append(d["capabilityId"])
        for mode in d.get("guidance", {}).get("failureModes", []):
            code, why = mode.get("diagnostic"), mode.get("explanation")
            if code in out and why and why not in out[code][1]:
                out[code][1].append(why)
    return dict(sorted(out.items()))


def markdown(packages: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> str:
    """docs/codes.md: the core registry by phase, then one table per capability package in
    ``packages`` (``(where it lives, manifest)``) listing the codes it declares."""
    lines = [
        "# Diagnostic codes",
        "",
        "<!-- Generated by `python -m aira_core.codes --markdown "
        + " ".join(f"--package {where}" for where, _ in packages)
        + "`; edit aira_core/codes.py, not this file. -->",
        "",
        "Every failure Aira reports carries a stable `code` to match on (and a message for "
        "people). The core's codes are registered in `aira_core/codes.py`, with the phase "
        "that raises them; a test fails on a code the core raises that is not registered. "
        "A kernel plugin's codes are its own: each capability declares the codes it can "
        "raise in its descriptor's `diagnostics`, and conformance refuses an implementation "
        "that raises an undeclared one.",
        "",
    ]
    total = len(CODES)
    lines += [f"## Core ({total} codes)", ""]
    lines += ["| phase | what raises it |", "| --- | --- |"]
    lines += [f"| [{p}](#{p}) | {_cell(what)} |" for p, what in PHASES.items()]
    for phase, what in PHASES.items():
        entries = [c for c in _CODES if c.phase == phase]
        lines += ["", f"### {phase}", "", f"{what[0].upper()}{what[1:]}.", ""]
        lines += ["| code | meaning |", "| --- | --- |"]
        for c in entries:
            note = f" (reserved: {c.reserved})" if c.reserved else ""
            lines.append(f"| `{c.code}` | {_cell(c.meaning)}{note} |")
    for where, manifest in packages:
        declared = package_codes(manifest)
        n = len(manifest.get("descriptors", []))
        name = manifest.get("name", where)
        lines += [
            "",
            f"## Package `{name}` ({len(declared)} codes)",
            "",
            f"The codes the {n} capabilities of `{where}` declare, explained by their "
            "`guidance.failureModes` where they have one; a code that is also a core code "
            "names its phase.",
            "",
            "| code | declared by | explanation |",
            "| --- | --- | --- |",
        ]
        for code, (caps, why) in declared.items():
            by = f"all {n}" if len(caps) == n else ", ".join(f"`{c}`" for c in caps[:3])
            if 3 < len(caps) < n:
                by += f" and {len(caps) - 3} more"
            notes = ([f"core code ({CODES[code].phase})"] if code in CODES else []) + why
            lines.append(f"| `{code}` | {by} | {_cell('; '.join(notes)) or '—'} |")
    return "\n".join(lines) + "\n"


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m aira_core.codes --markdown [--package PATH ...]``: docs/codes.md on stdout
    (PATH: a capability package directory or its manifest.json)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "--markdown" or len(args) % 2 != 1:
        print(main.__doc__, file=sys.stderr)
        return 2
    packages = []
    for flag, where in zip(args[1::2], args[2::2], strict=True):
        if flag != "--package":
            print(main.__doc__, file=sys.stderr)
            return 2
        path = Path(where)
        manifest = path / "manifest.json" if path.is_dir() else path
        try:
            packages.append((where, json.loads(manifest.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:
            # a package name instead of a path is the usual slip: say so in one line
            print(
                f"--package {where}: not a package directory or manifest ({exc})", file=sys.stderr
            )
            return 2
    sys.stdout.write(markdown(packages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
