{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "CUEgOWTXM5WMM2ftn2XWUoUX3oSlZFyh7QQ1IvKkLOjyQfr8MruXCfdweiFKuhvuk7NnEm2ZytKSvaXdikzuCg=="
}
