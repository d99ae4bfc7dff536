{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "BhnIeoFUDfya6pi1NkkoAOdTNp6esnBwiZlm5EkxrVBI+eHgKlZx8PdVsGhoNoIF/pYHmqhUOdT/vaR0CGGaBw=="
}
