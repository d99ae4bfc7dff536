{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "XzTSG1Icj7kBQE/pCiz6F6soolJvnGOSkSm1RtPDIhMQNXMaLV1xVF05b8E+j5pWlGLMzeDXJG2if1bxs05AAw=="
}
