{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "D/Ye6n2vnwOzFPY+17Ih/3L9NlUv2EWzNUO6tV+SIBUn1qxGDBdugw1Zp1TYLaVK2C1MJkzT03TGH3nx4BtLCg=="
}
