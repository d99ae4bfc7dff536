{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "tAsBnrBYwk3LUWNCRj3vWCGyiGuued36bTl51uynT3086OOPINf3qGp9Pto4jCNStNDDua4NT3JITL9YWUgGAg=="
}
