{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "vwFOwdeQwpquEy2JiiOmRovYrqhL1k3Drln/eSinm5KX62WYXBCovOSntctqmQ5Bvth3PSA49SOcRTjL1dN2AQ=="
}
