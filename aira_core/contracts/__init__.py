"""Wire shapes as pydantic models, one module per contract: ``amir`` (the model document and
its vocabulary), ``capability``, ``package``, ``plan``, ``script``, ``search``. JSON Schemas
are generated from them, never hand-written: :mod:`aira_core.schemas` names them for
``aira schema NAME``. This package imports nothing above it."""
