"""The MCP projection of the meta-operations (RFC-0002 §13): ``aira mcp serve``.

- :mod:`aira_core.mcp.tools`: the eleven tools (``task_open``, the nine meta-operations and
  ``model_apply``), their names, annotations and schemas, and the legal-domain enums in them.
- :mod:`aira_core.mcp.engine`: what the tools do, on the task runtime; no MCP SDK import.
- :mod:`aira_core.mcp.binding`: scoped binding of described capabilities as typed tools.
- :mod:`aira_core.mcp.server`: the SDK's low-level server over the engine, stdio and
  streamable HTTP.
"""
