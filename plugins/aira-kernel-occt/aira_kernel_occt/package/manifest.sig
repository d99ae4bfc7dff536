{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "lVvjFht86EzITB8DxCIXYR0CUZ9YK8RS5Mw9WG1geYLWmluPOZL51d5tYn66f78f28FtQcGw9YnBFOCjjt5aAg=="
}
