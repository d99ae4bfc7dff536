{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "7G3nnumBXB+/I7ZQ9u5MoHw9T39na5DfaQ12FLs8FqgQn+2bp2ACmDXfv9nGp4p3I267rfMo6gpBtD/zw/4xDw=="
}
