"""Entry point of the ``continuity`` plugin.

It registers nothing yet: the wire models and the projection hash are a library the
integration adapters will be built on, and an adapter is registered here once it exists.
The entry point is declared now so that ``aira plugins`` lists the distribution, and it stays
cheap to import (nothing of pydantic or jsonschema).
"""

from __future__ import annotations
