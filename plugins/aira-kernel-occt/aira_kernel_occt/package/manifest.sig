{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "Qg3vxRuLPFawtiu2/vSBOc38VHOHClcwJlmo4O78lTkyRa9Y751iEyKJO2JFnKx+EbQZS/XF28x7unYvBxruAQ=="
}
