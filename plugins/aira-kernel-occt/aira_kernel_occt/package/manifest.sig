{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "vAogyLOs4rzZU8sCj9o3zYSHptxf6o3nAGdJoP6oC0chTbr+da/d6Ztw2x99MCnxXpqXqJn6NrOBiIzUkRpJBg=="
}
