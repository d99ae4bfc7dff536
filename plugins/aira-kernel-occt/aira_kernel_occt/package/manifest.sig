{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "lqxs9ke9V8Ltz+5TckG2EkHbwwTvTD+K3Cm/TF8TLhBe0d3Yu8mSSMz9o+kuP6u6v8zor84yDjuDYw/tBKu8Cw=="
}
