{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "szzuLiHvDKtxlkg4RVl0msk81vZLGQaBZegHbmAahE8Z0efX/A8Y50SaEDo1uy2Ekd+5C/GXnpndT+nbHawnDw=="
}
