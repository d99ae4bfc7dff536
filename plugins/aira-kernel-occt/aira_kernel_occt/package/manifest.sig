{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "yBzPv5Bji10dArwqPIYu5bgQ9S++KEfycOGaa2IvJEy8x1VITPcOGcQjzF6o28fVOeKVySaI2sQQSMeUnXsrCQ=="
}
