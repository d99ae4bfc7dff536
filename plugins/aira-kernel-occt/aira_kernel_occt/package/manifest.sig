{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "aSGdoWeNxV04mqgCaMQKbBEY0IVl+UA1PJbUQJXDyHUEi9hKXSOqWvIPKU2tuYzOvIu6P6vj+cu2gaf+Ex+3Cg=="
}
