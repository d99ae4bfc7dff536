"""acme.holes: an example third-party Aira capability package (not first-party).

ISO metric clearance and tapped hole patterns (workflows), a repair for fillets that do not
fit (``FILLET_RADIUS_TOO_LARGE``), and a hole-to-edge DFM validator. The package's manifest
is data (``package/manifest.json``); the only code is the validator and the plugin hooks.
"""

__version__ = "1.0.0"
