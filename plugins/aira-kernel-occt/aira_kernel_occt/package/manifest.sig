{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "2hlM5VUktx9aNhEn6KXGZ46WNJk6Ek1hpGQlSi/6KjMkJCbpPH1Tj84S+VbSaT+Wj33RsknfOeqomO2Gk235Aw=="
}
