{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "rI2A6CEP/w0IofC8jk1tqPbn2xMbmEf70Crw2DKC99L4EfktUDbcBYFerL8GnGCSm5VfcqK9/AAiGBuzcsEzCA=="
}
