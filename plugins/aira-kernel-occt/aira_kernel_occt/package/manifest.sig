{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "gPdS1GzQJ7BS5LMx8s/Um3Wn1lAmEpWVkp2U+PwRnSXCpEN1i+xjLYpuA3CbS1rveWYdrGJrxe2qRkPPlWTvDw=="
}
