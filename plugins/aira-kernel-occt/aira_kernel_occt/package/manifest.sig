{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "m3cZc1x6oDO2DPZ2GNdHNJoBy0B8ViY6VnCc5L4zaz0CGjIa0Ymv6pYkmWwjaBx70cI7F+IpFWx1U/tQMIRhAg=="
}
