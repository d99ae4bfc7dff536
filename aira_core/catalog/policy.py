"""What a Session Grant allows for one capability: the one place that decides it, for search
hits, disclosure and ``plan.check`` alike."""

from __future__ import annotations

from collections.abc import Iterable

from aira_core.contracts.capability import (
    WRITING_KINDS,
    Authorization,
    CapabilityDescriptor,
    CapabilityKind,
    GrantBudgets,
    GrantPermissions,
    RiskLevel,
    SessionGrant,
    TaxonomyPath,
)

RISK_RANK = {level: i for i, level in enumerate(RiskLevel)}

LOCAL_GRANT = SessionGrant(
    grant_id="grant:local",
    actor="local-user",
    query_classes=[TaxonomyPath.QUERY, TaxonomyPath.VALIDATION, TaxonomyPath.IO],
    write_classes=[TaxonomyPath.AUTHORING, TaxonomyPath.IO_IMPORT],
    permissions=GrantPermissions(destructive=True, export=True),
    auto_commit_max_risk=RiskLevel.CRITICAL,
    budgets=GrantBudgets(),
)
"""The grant of a local user working on their own store: everything, without approvals."""


def class_allowed(path: str, classes: Iterable[TaxonomyPath]) -> bool:
    """Whether taxonomy ``path`` lies under one of ``classes``."""
    return any(path == c.value or path.startswith(c.value + ".") for c in classes)


def authorize(
    grant: SessionGrant, d: CapabilityDescriptor, *, approved: bool = False
) -> tuple[Authorization, list[tuple[str, str]]]:
    """``allowed``, ``approvalRequired`` or ``denied`` for ``d`` under ``grant``, with the
    reasons as ``(code, message)``: the taxonomy class (a write class for kinds that change
    the model), the destructive and export permissions, and the risk the grant commits
    without approval."""
    denied: list[tuple[str, str]] = []
    approval: list[tuple[str, str]] = []
    path = d.taxonomy.primary.value
    writes = d.kind in WRITING_KINDS
    classes = grant.write_classes if writes else grant.query_classes
    if d.kind is CapabilityKind.REPAIR:
        # a repair lives in the class of what it repairs (often authoring) but only makes a
        # candidate; applying that candidate is authorized as any plan is
        classes = [*grant.query_classes, *grant.write_classes]
    if not class_allowed(path, classes):
        denied.append(
            (
                "PLAN_CLASS_DENIED",
                f"grant {grant.grant_id} does not allow "
                f"{'writing' if writes else 'using'} {path} capabilities ({d.capability_id})",
            )
        )
    if d.risk.destructive and not grant.permissions.destructive:
        denied.append(
            (
                "GRANT_PERMISSION_DENIED",
                f"{d.capability_id} is destructive and grant "
                f"{grant.grant_id} does not permit destructive changes",
            )
        )
    if d.kind is CapabilityKind.EXPORTER and not grant.permissions.export:
        denied.append(
            (
                "GRANT_PERMISSION_DENIED",
                f"{d.capability_id} exports and grant {grant.grant_id} does not permit export",
            )
        )
    if RISK_RANK[d.risk.level] > RISK_RANK[grant.auto_commit_max_risk] and not approved:
        approval.append(
            (
                "PLAN_APPROVAL_REQUIRED",
                f"{d.capability_id} is {d.risk.level.value} risk; grant {grant.grant_id} "
                f"commits up to {grant.auto_commit_max_risk.value} without approval",
            )
        )
    if denied:
        return Authorization.DENIED, denied + approval
    if approval:
        return Authorization.APPROVAL_REQUIRED, approval
    return Authorization.ALLOWED, []
