{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "CRbuvBhfLZ5sbA/EuD4siIe1wRhRjXwaSw0H7/WlxJPmtOYAlz9vRTlqkp18tNQrRzoPs23rd/vHc6fxTVchDg=="
}
