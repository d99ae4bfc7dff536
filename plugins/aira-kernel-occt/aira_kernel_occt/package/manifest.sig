{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "15EduweU4GT3Jb4YaGYY5RGeUrnDFpJ6rcr77vm/Z9+SAGZ70uhl+L9x5x30Wol5oy9RFyq1kCU++7h8RRuFBA=="
}
