{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "f0RAWnObe0vlYqKWSikGtcnLG4eHMK1oe6JWuzjSQ3znWG0H3kFnP1fNhnsDuAtingIeAwcYS7vOKozvmcpkDw=="
}
