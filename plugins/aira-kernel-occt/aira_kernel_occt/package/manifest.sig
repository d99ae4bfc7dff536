{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "toD7pYz+rHPJ+ORrrW2bESEud0oak0FO7syapYoTLwt2BojsJ3UtGCnqscUIsC/SzMxass6P9704Qn5v3Yi0Cw=="
}
