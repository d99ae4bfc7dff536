{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "Wv2Bj67j/5PUWKsf9E/psmgA+hM2uT7SakjV5NhOxuiP/eb41QtoiWasal05QR1IU+HlaTqRX2lj2sLv/vBjAg=="
}
