"""Aira's side of the three-product integration contract (spec 004): the wire shapes that
Intent Loop, Context Continuity and Execution Fidelity Guard exchange
(:mod:`aira_continuity.wire`) and the Guard's projection hash
(:mod:`aira_continuity.projection`).

Importing the package loads nothing: pydantic comes in with :mod:`aira_continuity.wire`.
"""
