{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "AL+RN7HM8zHDrQu2bfBqUYXwVwExkrScfKWgp4QAu7PWdQTHkv7fGDAa3K73G5Jx6SR4necdPLkFhkLfRQ4sBQ=="
}
