{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "z7Vmx7vgoE3ezFJil12WDQcCMpJsuBkEFPkNf0tjWGrDE0iTDgjR8vWyNw2t/Riqj8NaG5Wl1vtlZVx6dr04DQ=="
}
