"""``aira plugins``: what the installed plugins register, and the ones that failed."""

from __future__ import annotations

from aira_core.cli._options import JsonFlag
from aira_core.cli._output import _console, _print_json, _table


def plugins_cmd(as_json: JsonFlag = False) -> None:
    """List installed plugins, what they register, and the ones that failed to load."""
    from aira_core.extensions import EXTENSION_TYPES
    from aira_core.plugins import get_registry

    registry = get_registry()
    registered: dict[str, dict[str, list[str]]] = {}
    for ext in EXTENSION_TYPES:
        for name, entry in registry.by_type[ext.key].items():
            registered.setdefault(entry.plugin, {}).setdefault(ext.key, []).append(name)
    if as_json:
        _print_json(
            {
                "format": "aira.plugins/1",
                "plugins": [
                    {**p.to_json(), "registered": registered.get(p.name, {})}
                    for p in registry.plugins
                ],
                "errors": [e.to_json() for e in registry.errors],
            }
        )
        return
    rows = [
        [
            p.name,
            p.distribution,
            p.version or "",
            p.status,
            "; ".join(
                f"{k}: {', '.join(sorted(v))}"
                for k, v in sorted(registered.get(p.name, {}).items())
            ),
        ]
        for p in registry.plugins
    ]
    _table("Plugins", ["name", "distribution", "version", "status", "registers"], rows)
    if registry.errors:
        from rich.markup import escape

        console = _console()
        console.print(f"[red]{len(registry.errors)} plugin error(s):[/red]")
        for e in registry.errors:
            where = f"{e.distribution} {e.version}" if e.version else e.distribution
            console.print(f"  [red]{e.code}[/red] {escape(f'{e.plugin} ({where}): {e.message}')}")
