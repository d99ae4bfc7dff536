{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "PQGuyHyi/gD9R7EnfEdxsr0gsHmbVfW0dudOL/siLoJIjX8qFRCFDwWcJyPgVW2cP1LEzHrdkRFd5okH9SZzAw=="
}
