"""The intent adapter: binds a task's Intent Frame (spec 000 §9.3) to the user-intent
contract the intent owner publishes (spec 004), and keeps a ledger of the versions it
verified so a rollback or a reused version is refused, not bound.

The contract file is a provider document ``{envelope, projection}`` (Intent Loop's, bound by
``snapshot_sha256``) or a bare seven-field TaskContractLite (identity ``lite:`` + 20 hex of its
hash, version 1, source ``task-contract-lite``), read as the Guard reads it
(:func:`aira_continuity.wire.read_contract_document`). With no contract file the adapter
derives a TaskContractLite from the frame (:meth:`IntentLoopAdapter.derived_contract`) and
binds it, frame unchanged: the Guard and Continuity then have a contract to refer to.

Mapping of a contract onto the frame (the contract owns the intent; the frame's own entries
are kept, the contract's added after them without repeats):

- ``objective`` → ``goal`` (replaced: the owner's words);
- ``must`` → ``hardRequirements``;
- ``must_not``: ``action:`` rules in :data:`ACTION_EFFECTS` and ``prohibited effect: <Effect>``
  → ``prohibitedEffects``; other natural language → ``hardRequirements`` as ``must not: …``
  (the model must see it); other structured rules (``tool:``, ``command-prefix:``, other
  actions) are the Guard's to enforce on host actions and stay provider-owned references;
- ``scope.include``: entries that are body aliases (``b:<label>``, what a frame's scope holds)
  → ``scope``; other include entries and every ``exclude`` entry (the frame cannot express an
  exclusion) stay provider-owned references;
- ``completion_evidence``: a requirement naming a validator the host registered (a
  ``cap:…@N`` id or ``name@x.y.z`` ref in ``validators``) → ``acceptanceAssertions``;
  otherwise → ``hardRequirements`` as ``evidence: …``.

Provider-owned references of the last bind are :attr:`IntentLoopAdapter.provider_refs`.

Refusals (an invalid or missing file, a hash mismatch, a version rollback, a same-version
collision) never raise to the host: the adapter stays on the last verified binding of that
contract, marked ``stale``, or answers unbound; each refusal is a warning in
:attr:`IntentLoopAdapter.diagnostics` (the seam's IntentBinding has no field for it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from aira_continuity.errors import (
    CONTRACT_INVALID,
    CONTRACT_LEDGER_INVALID,
    CONTRACT_VERSION_COLLISION,
    CONTRACT_VERSION_ROLLBACK,
)
from aira_core.contracts.capability import Effect
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError, Diagnostic, Severity

__all__ = [
    "ACTION_EFFECTS",
    "FACET_KINDS",
    "LEDGER_FILE",
    "IntentLoopAdapter",
    "commitment_id",
    "facet_kind",
]

LEDGER_FILE = "intent-bindings.json"
CONTRACT_MAX_BYTES = 256 * 1024
"""The Guard refuses a contract file larger than this; so does the adapter."""

ACTION_EFFECTS: dict[str, Effect] = {
    "external": Effect.EXTERNAL_SIDE_EFFECT,
    "external_side_effect": Effect.EXTERNAL_SIDE_EFFECT,
    "publish": Effect.EXTERNAL_SIDE_EFFECT,
    "network": Effect.EXTERNAL_SIDE_EFFECT,
}
"""``must_not`` ``action:`` tags that name an Aira effect class. Only what leaves the store
maps: ``delete``/``write`` name host actions, not a class of model edit, and forbidding
``changesTopology`` for them would forbid every fillet."""
_EFFECT_TEXT = "prohibited effect: "
"""``must_not`` natural language naming an Aira effect class (the derived contract writes it)."""

FACET_KINDS: dict[str, str] = {
    "outcome": "objective",
    "hard_constraint": "hard_constraint",
    "unknown": "open_question",
    "disagreement": "dispute",
}
"""Intent Loop facet → Context Continuity kind (spec 004's planned minimal mapping).
``success_signal``, ``failure_signal``, ``soft_constraint`` and ``tradeoff`` (and
``result_feedback``, which the table does not name) stay provider-owned references."""

FRAME_FACETS: dict[str, str] = {
    "goal": "outcome",
    "hard_requirements": "hard_constraint",
    "unknowns": "unknown",
    "soft_preferences": "soft_constraint",
    "acceptance_assertions": "success_signal",
}
"""Which Intent Loop facet each Intent Frame field carries."""

_ALIAS = re.compile(r"b:[A-Za-z0-9_.-]{1,64}")
_VALIDATOR_TOKEN = re.compile(
    r"cap:[a-z][a-zA-Z0-9]*(?:\.[a-z][a-zA-Z0-9]*)*@[0-9]+"
    r"|[a-z][a-zA-Z0-9]*(?:\.[a-z][a-zA-Z0-9]*)*@[0-9]+\.[0-9]+\.[0-9]+"
)


def facet_kind(facet: str) -> str | None:
    """The Continuity kind of an Intent Loop facet; None: a provider-owned reference."""
    return FACET_KINDS.get(facet)


def commitment_id(kind: str, text: str) -> str:
    """A stable id for an open commitment: ``<kind>:`` + 16 hex of SHA-256 over its text, so
    the snapshot names it without copying the text (Continuity carries ids, not bodies)."""
    import hashlib

    return f"{kind}:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"


def _add(own: list[Any], more: Iterable[Any]) -> list[Any]:
    out = list(own)
    for item in more:
        if item not in out:
            out.append(item)
    return out


def _warning(code: str, message: str, subject: str | None, pointer: str | None = None) -> Any:
    return Diagnostic(
        code=code, severity=Severity.WARNING, subject=subject, message=message, pointer=pointer
    )


class IntentLoopAdapter:
    """The ``intent`` role: binds a frame to the contract file (or a derived TaskContractLite).

    ``contract``: the provider document or TaskContractLite file; None derives one from the
    frame. ``state_dir``: where the ledger ``intent-bindings.json`` lives (default
    ``$AIRA_HOME/integrations``: it must outlive a run to see a rollback across runs).
    ``validators``: validator capability ids / target refs the host registered, which a
    completion-evidence requirement may name to become an acceptance assertion."""

    name = "aira-continuity-intent"
    role: Literal["intent"] = "intent"

    def __init__(
        self,
        contract: Path | None = None,
        state_dir: Path | None = None,
        *,
        validators: Iterable[str] = (),
    ) -> None:
        self.contract = contract
        self.state_dir = state_dir
        self.validators = frozenset(validators)
        self.diagnostics: list[Diagnostic] = []
        """The refusals and warnings of the last :meth:`bind`."""
        self.provider_refs: tuple[str, ...] = ()
        """The contract entries of the last bind the frame cannot hold (see the module)."""
        self.binding: Any = None
        self.bound_contract: Any = None
        self.out_dir: Path | None = None
        """Where a fresh binding's envelope is written (``configure``: the run's ``intent``)."""
        """The TaskContractLite behind ``binding`` (the guard judges by it): the owner's."""
        """The last IntentBinding answered (None: unbound)."""

    def configure(self, options: Any) -> None:
        """Take the run's options: ``options.contract`` (the contract file or None). The
        ledger stays where it is (``options.state_dir`` if the options carry one): a run
        directory would forget the versions the previous run verified."""
        self.contract = options.contract
        run_dir = getattr(options, "run_dir", None)
        self.out_dir = Path(run_dir) / "intent" if run_dir is not None else None
        validators = getattr(options, "validators", None)
        if validators:
            self.validators = frozenset(str(v) for v in validators)
        state_dir = getattr(options, "state_dir", None)
        if state_dir is not None:
            self.state_dir = state_dir

    # -- the seam ---------------------------------------------------------------------------------

    def bind(self, frame: IntentFrame) -> Any:
        """The frame bound to the contract (an IntentBinding), the last verified binding of
        that contract marked stale after a refusal, or None (unbound)."""
        self.diagnostics = []
        self.provider_refs = ()
        self.bound_contract = None
        self.binding = self._bind(frame)
        return self.binding

    def derived_contract(self, frame: IntentFrame) -> Any:
        """The TaskContractLite the frame states, for a task with no intent owner: goal →
        objective, the first scope entry (or "the design model") → primary_object, delivery
        surface ``aira-model``, scope → include, hard requirements → must, prohibited effects
        → must_not, no authorization entries, one completion evidence (source ``test``) per
        acceptance assertion and hard requirement, or the goal when there is none."""
        from aira_continuity.wire import TaskContractLite, js_trim, read

        def filled(items: Iterable[str]) -> list[str]:
            # the Guard refuses blank entries; a frame may hold one
            return _add([], (i for i in items if js_trim(i)))

        goal = frame.goal if js_trim(frame.goal) else "the user's design task"
        scope = filled(frame.scope)
        must = filled(frame.hard_requirements)
        evidence = filled([*frame.acceptance_assertions, *must]) or [goal]
        return read(
            TaskContractLite,
            {
                "objective": goal,
                "primary_object": scope[0] if scope else "the design model",
                "delivery_surface": ["aira-model"],
                "scope": {"include": scope, "exclude": []},
                "must_and_must_not": {
                    "must": must,
                    "must_not": [_must_not(Effect(e)) for e in frame.prohibited_effects],
                },
                "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
                "completion_evidence": [
                    {"requirement": r, "acceptable_sources": ["test"]} for r in evidence
                ],
            },
        )

    # -- binding ----------------------------------------------------------------------------------

    def _bind(self, frame: IntentFrame) -> Any:
        from aira_core.integrations import IntentBinding

        if self.contract is None:
            from aira_continuity.wire import read_contract_document

            contract = self.derived_contract(frame)
            digest = contract.sha256()
            self.bound_contract = contract
            self._export_envelope(read_contract_document(contract.to_wire()).envelope)
            return IntentBinding(
                "lite:" + digest[:20], 1, digest, "task-contract-lite", False, frame
            )
        ledger = self._ledger()
        if ledger is None:
            return None
        # the ledger keys a contract file by a hash of its absolute path: it must find the
        # file again for the stale fallback, but a private path never goes into a store
        path_key = (
            "path:sha256:"
            + hashlib.sha256(
                str(Path(self.contract).expanduser().absolute()).encode("utf-8", "surrogatepass")
            ).hexdigest()
        )
        try:
            found = self._read(Path(self.contract))
        except AiraError as exc:
            problems = getattr(exc, "diagnostics", None) or [exc.diagnostic]
            for d in problems:
                self.diagnostics.append(
                    _warning(d.code, d.message, self._subject(), d.pointer or None)
                )
            return self._stale(frame, ledger, _ref_of(getattr(exc, "raw", None)), path_key)
        ref = found.envelope.contract_ref
        version = found.envelope.contract_version
        digest = found.envelope.snapshot_sha256
        last = ledger["contracts"].get(ref)
        if last is not None and version < last["version"]:
            self.diagnostics.append(
                _warning(
                    CONTRACT_VERSION_ROLLBACK,
                    f"{ref} version {version} is older than version {last['version']}, "
                    "verified before; the intent owner only raises a version",
                    self._subject(),
                    "/envelope/contract_version",
                )
            )
            return self._stale(frame, ledger, ref, path_key)
        if last is not None and version == last["version"] and digest != last["sha256"]:
            self.diagnostics.append(
                _warning(
                    CONTRACT_VERSION_COLLISION,
                    f"{ref} version {version} hashes to {digest}, but {last['sha256']} was "
                    "verified for that version; changed content needs a higher version",
                    self._subject(),
                    "/envelope/snapshot_sha256",
                )
            )
            return self._stale(frame, ledger, ref, path_key)
        projection = found.contract.to_wire()
        entry = {
            "version": version,
            "sha256": digest,
            "source": found.envelope.source,
            "projection": projection,
        }
        if last != entry or ledger["files"].get(path_key) != ref:
            ledger["contracts"][ref] = entry
            ledger["files"][path_key] = ref
            self._save(ledger)
        self.bound_contract = found.contract
        self._export_envelope(found.envelope)
        return IntentBinding(
            ref, version, digest, found.envelope.source, False, self._map(frame, found.contract)
        )

    def _subject(self) -> str:
        return f"intent:{self.name}"

    def _read(self, path: Path) -> Any:
        """The file's wire.Binding; an AiraError otherwise, with the parsed value (when there
        is one) kept as ``exc.raw`` for the stale fallback."""
        from aira_continuity.errors import WireError, problem
        from aira_continuity.wire import read_contract_document
        from aira_core.canonical import StrictJSONError, loads_strict
        from aira_core.inputs import read_input

        data = read_input(path, "json", what="contract file", unreadable=CONTRACT_INVALID)
        if len(data) > CONTRACT_MAX_BYTES:
            raise WireError(
                [problem(CONTRACT_INVALID, f"the contract file is over {CONTRACT_MAX_BYTES} bytes")]
            )
        try:
            raw, _ = loads_strict(data, "the contract file")
        except StrictJSONError as exc:
            raise WireError([problem(CONTRACT_INVALID, str(exc))]) from None
        try:
            return read_contract_document(raw)
        except WireError as exc:
            exc.raw = raw  # type: ignore[attr-defined]
            raise

    def _stale(
        self, frame: IntentFrame, ledger: dict[str, Any], ref: str | None, path_key: str
    ) -> Any:
        """The last verified binding of ``ref`` (or of the contract file, when the file names
        no ref), stale; None when there is none."""
        from aira_continuity.wire import TaskContractLite, read
        from aira_core.integrations import IntentBinding

        ref = ref if ref in ledger["contracts"] else ledger["files"].get(path_key)
        last = ledger["contracts"].get(ref) if ref is not None else None
        if last is None:
            return None
        try:
            contract = read(TaskContractLite, last["projection"])
        except AiraError:
            self.diagnostics.append(self._ledger_invalid())
            return None
        self.bound_contract = contract
        return IntentBinding(
            ref, last["version"], last["sha256"], last["source"], True, self._map(frame, contract)
        )

    def _map(self, frame: IntentFrame, contract: Any) -> IntentFrame:
        """The frame bound to ``contract`` (the module's mapping); records provider refs."""
        rules = contract.must_and_must_not
        effects: list[Effect] = []
        must_not_text: list[str] = []
        refs: list[str] = []
        for rule in rules.must_not:
            effect, kept = _effect_of(rule)
            if effect is not None:
                effects.append(effect)
            elif kept:
                refs.append("must_not: " + rule)
            else:
                must_not_text.append("must not: " + rule)
        scope = [s for s in contract.scope.include if _ALIAS.fullmatch(s)]
        refs += [f"scope.include: {s}" for s in contract.scope.include if s not in scope]
        refs += [f"scope.exclude: {s}" for s in contract.scope.exclude]
        acceptance, evidence = [], []
        for item in contract.completion_evidence:
            named = set(_VALIDATOR_TOKEN.findall(item.requirement)) & self.validators
            (acceptance if named else evidence).append(item.requirement)
        self.provider_refs = tuple(_add([], refs))
        wire = frame.to_wire()
        return IntentFrame.model_validate(
            {
                **wire,
                "goal": contract.objective,
                "hardRequirements": _add(
                    frame.hard_requirements,
                    [*rules.must, *must_not_text, *("evidence: " + e for e in evidence)],
                ),
                "prohibitedEffects": [
                    e.value for e in _add(list(frame.prohibited_effects), effects)
                ],
                "scope": _add(frame.scope, scope),
                "acceptanceAssertions": _add(frame.acceptance_assertions, acceptance),
            }
        )

    # -- the ledger -------------------------------------------------------------------------------

    def _ledger_path(self) -> Path:
        from aira_core.config import aira_home

        base = self.state_dir if self.state_dir is not None else aira_home() / "integrations"
        return Path(base) / LEDGER_FILE

    def _ledger(self) -> dict[str, Any] | None:
        """``{"contracts": {ref: entry}, "files": {path hash: ref}}``; a new one when there is no
        file; None (with a warning) when the file is there but unreadable: binding without
        it would let a rollback pass unseen."""
        import json

        path = self._ledger_path()
        if not path.exists():
            return {"contracts": {}, "files": {}}
        try:
            from aira_core.inputs import read_input

            value = json.loads(read_input(path, "json", what="ledger"))
            ok = _is_ledger(value)
        except (AiraError, ValueError):
            ok = False
        if not ok:
            self.diagnostics.append(self._ledger_invalid())
            return None
        return {"contracts": dict(value["contracts"]), "files": dict(value["files"])}

    def _ledger_invalid(self) -> Diagnostic:
        return _warning(
            CONTRACT_LEDGER_INVALID,
            f"{LEDGER_FILE} cannot be read as a ledger of verified contract versions; "
            "unbound (move it away to start a new ledger)",
            self._subject(),
        )

    def _save(self, ledger: dict[str, Any]) -> None:
        path = self._ledger_path()
        # The binding is verified; only the next run's rollback check is weaker.
        self._write(path, {"schemaVersion": 1, **ledger}, "the ledger was not updated")

    def _write(self, path: Path, document: Any, failed: str) -> None:
        """``document`` as canonical JSON at ``path``, atomically; a failure is a warning
        with its reason only (an OSError's own text may name a private directory)."""
        from aira_core.canonical import canonical_bytes
        from aira_core.files import write_file

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file(path, canonical_bytes(document) + b"\n", force=True)
        except (AiraError, OSError) as exc:
            code, why = (
                (exc.code, exc.diagnostic.message)
                if isinstance(exc, AiraError)
                else ("OUTPUT_UNWRITABLE", exc.strerror or type(exc).__name__)
            )
            self.diagnostics.append(_warning(code, f"{failed}: {why}", self._subject()))

    def _export_envelope(self, envelope: Any) -> None:
        """The envelope of a fresh binding as ``<run>/intent/envelope.json``: the provider's
        own, or the Guard's fallback envelope of a bare or derived TaskContractLite (wire
        1.0). A stale binding writes none: the run is on the last verified contract."""
        if self.out_dir is not None:
            self._write(self.out_dir / "envelope.json", envelope.to_wire(), "no envelope written")


def _must_not(effect: Effect) -> str:
    """The must_not entry of a prohibited effect: the Guard's own rule where one names it."""
    if effect is Effect.EXTERNAL_SIDE_EFFECT:
        return "action:external_side_effect"
    return _EFFECT_TEXT + effect.value


def _effect_of(rule: str) -> tuple[Effect | None, bool]:
    """(the effect a must_not entry names, whether it is a structured rule for the Guard)."""
    from aira_continuity.wire import js_trim

    text = js_trim(rule)
    lowered = text.lower()
    for prefix in ("action:", "tool:", "command-prefix:"):
        if lowered.startswith(prefix):
            tag = js_trim(lowered[len(prefix) :])
            return (ACTION_EFFECTS.get(tag) if prefix == "action:" else None), True
    if lowered.startswith(_EFFECT_TEXT):
        value = js_trim(text[len(_EFFECT_TEXT) :])
        if value in {e.value for e in Effect}:
            return Effect(value), False
    return None, False


def _ref_of(raw: Any) -> str | None:
    """The contract_ref a refused document states, if it states one: a provider document's
    envelope ref (a bare TaskContractLite's identity is its hash, which a refusal lacks)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("envelope"), Mapping):
        ref = raw["envelope"].get("contract_ref")
        return ref if isinstance(ref, str) else None
    return None


def _is_ledger(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("schemaVersion") != 1:
        return False
    contracts, files = value.get("contracts"), value.get("files")
    if not isinstance(contracts, dict) or not isinstance(files, dict):
        return False
    for entry in contracts.values():
        if not isinstance(entry, dict) or set(entry) != {
            "version",
            "sha256",
            "source",
            "projection",
        }:
            return False
        if not isinstance(entry["version"], int) or not isinstance(entry["sha256"], str):
            return False
    return all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
