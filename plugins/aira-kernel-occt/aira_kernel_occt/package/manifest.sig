{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "8v9YEQXaSsw/KC8YiAOVFcPCq63IaNxXQt/jBliAPxCUqViMVe544b0C2qWtlMfoKBlEI9Hi2Ykg51NzvMwsDg=="
}
