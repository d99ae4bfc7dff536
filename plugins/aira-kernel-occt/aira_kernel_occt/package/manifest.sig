{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "DUZQLSiH4DqprDDqyjDTHAeOler6boRK/qB5QNp9+Z/JEXru6VJYDHLSWF0u4VCMgVcPY3Nkpir6JlcC32AxCQ=="
}
