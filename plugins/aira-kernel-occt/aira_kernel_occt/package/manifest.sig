{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "GbC+2jqb+nUgRhYwrmC6UYQsuu7oLAlEg/pwwyIbjGWt0bPTQjkdiSG3zI8yCUh0bThNHQEr+iyCb+f2EQjyCQ=="
}
