{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "5DuYKfIeWBjCxU8fganu4bQ1YM/F2b8HWmBmJ41rAnmyU4Tr1qNql3NtZnyFCzSEtrlyU3ooGbX4Hter+wICDA=="
}
