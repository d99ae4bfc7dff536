{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "i56AZ2e8wd+PaNOLM/wP0y9xWpCwux48dmnsNsdO+cgiyICINSf97bx+Ymt+oY8Ki31wAsHTQ2poE7G+K1jaCQ=="
}
