{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "H2UMEW7qRtr9ZF3Qm4OsLIXeT+Jouya6brwptTR4ZYPBJ9DJSBzfEZgmGvUXhnUNC+bAICzvO/SCB5hkdxawAQ=="
}
