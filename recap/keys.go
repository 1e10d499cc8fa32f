package recap

import (
	"strings"
	"unicode"
)

// keyClass says how a name (a JSON key, an environment variable, a flag,
// a header, a query parameter) marks the value it names.
type keyClass int

const (
	keyPlain    keyClass = iota // not secret
	keyAbout                    // about a secret ("private_key_id", "token_count"): key material is secret, words and numbers are not
	keyToken                    // a value that looks like a credential is secret
	keyPassword                 // any value but a placeholder is secret
)

// marks reports whether v, the value of a name of class c, is a secret.
func (c keyClass) marks(v string) bool {
	switch c {
	case keyPassword:
		return !placeholder(v)
	case keyToken:
		return !placeholder(v) && credentialLike(v)
	case keyAbout:
		return !placeholder(v) && opaque(v)
	}
	return false
}

// Words of a name, matched as whole words (never substrings: "totalTokens"
// is no token, "certificate-authority-data" is no auth).
var (
	passwordWords = set("password", "passwd", "passphrase", "pwd", "pass", "passcode",
		"storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass", "pgpassword", "mysqlpwd")
	tokenWords = set("secret", "token", "credential", "credentials", "authorization", "auth", "cookie",
		"apikey", "accesskey", "secretkey", "privatekey", "privkey", "creds", "authtoken", "accesstoken", "refreshtoken",
		"sessiontoken", "apitoken", "clientsecret", "bearertoken", "idtoken", "csrftoken", "xsrftoken",
		"authkey", "masterkey", "signingkey", "encryptionkey", "licensekey", "sharedaccesskey",
		"accountkey", "connectionstring", "sastoken", "pat", "datakey")
	// keyModifiers make a following "key" secret: "api key", "client key".
	keyModifiers = set("api", "access", "secret", "private", "priv", "client", "auth", "master", "encryption",
		"signing", "session", "license", "account", "storage", "shared", "service", "app", "admin",
		"consumer", "webhook", "hmac", "subscription", "deploy", "ssh", "gpg", "pgp", "encrypt",
		"decrypt", "crypto", "cipher", "aes", "jwt", "bot", "integration", "personal", "root", "sas")
	// qualifiers after a secret word say the name is about a secret
	// rather than the secret itself: "tokenCount", "password_file",
	// "secretName", "private_key_id".
	qualifiers = set("count", "counts", "limit", "limits", "type", "types", "kind", "usage", "used",
		"estimate", "estimated", "budget", "length", "len", "size", "index", "idx", "id", "ids", "name",
		"names", "ref", "refs", "file", "files", "path", "paths", "dir", "env", "var", "variable",
		"prompt", "stdin", "expiry", "expires", "expiration", "ttl", "lifetime", "field", "fields",
		"param", "params", "url", "uri", "endpoint", "policy", "rotation", "required", "enabled",
		"disabled", "hint", "format", "mode", "version", "min", "max", "total", "source", "location",
		"label", "description", "provider", "manager", "method", "scope", "scopes", "issuer", "audience",
		"strategy", "placeholder", "pattern", "regex", "prefix", "suffix", "bytes", "chars",
		"encoding", "algorithm", "alg", "schema", "template", "arn", "command", "cmd", "helper",
		"store", "storage", "reset", "changed", "set", "valid", "invalid", "missing", "error", "errors",
		"rule", "rules", "check", "strength", "age", "created", "updated", "at", "header", "headers",
		"key", "mount", "volume", "class", "uid", "user", "username", "login", "fd", "sock", "socket",
		"status", "state", "date", "time", "timestamp")

	// others after a secret word say the name is about another thing of
	// the secret's context: "auth_user_id", "token_issuer".
	others = set("user", "username", "login", "issuer", "audience", "provider", "owner")
	// quantifiers before a secret word make a name about a number of them:
	// "max_token", "min_password".
	quantifiers = set("max", "min", "num", "total")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// classifyKey says whether name marks a secret value. A name is secret
// when it holds a secret word ("password", "token", "secret", "auth",
// "credentials", "api key", "private key"; whole words, in any case
// style), and about a secret when a qualifier follows the word
// ("private_key_id", "secretId", "token_count", "password_min_length")
// or a quantifier comes before it ("max_token").
func classifyKey(name string) keyClass {
	words := splitWords(name)
	class := keyPlain
	for i := range words {
		c := secretWordAt(words, i)
		if c == keyPlain {
			continue
		}
		if i > 0 && quantifiers[words[i-1]] {
			c = keyAbout
		}
		for _, w := range words[i+1:] {
			if others[w] {
				c = keyPlain
				break
			}
			if qualifiers[w] {
				c = keyAbout
			}
		}
		class = max(class, c)
	}
	return class
}

// secretWordAt is the class of words[i] as a secret word: one of the
// secret words, or "key" after a word that makes it one ("api key",
// "private key"), or a secret word run together with "id" ("secretid").
func secretWordAt(words []string, i int) keyClass {
	w := words[i]
	if c := wordClass(w); c != keyPlain {
		return c
	}
	if (w == "key" || w == "keys") && i > 0 && (keyModifiers[words[i-1]] || strings.HasSuffix(words[i-1], "api")) {
		return keyToken // "XAPIKey" splits as xapi key
	}
	if base, ok := strings.CutSuffix(w, "id"); ok && wordClass(base) != keyPlain {
		return keyAbout
	}
	return keyPlain
}

// wordClass is the class of one word of a name: a secret word, with a
// number after it ("password2"), in the plural ("secrets"), or ending a
// run-together name ("adminpassword", "identitytoken").
func wordClass(w string) keyClass {
	w = strings.TrimRightFunc(w, unicode.IsDigit)
	switch {
	case passwordWords[w] || passwordWords[strings.TrimSuffix(w, "s")]:
		return keyPassword
	case tokenWords[w] || w == "secrets":
		return keyToken
	}
	for _, suffix := range []string{"password", "passwd", "passphrase"} {
		if strings.HasSuffix(w, suffix) {
			return keyPassword
		}
	}
	for _, suffix := range []string{"token", "secret", "apikey", "secretkey", "accesskey", "privatekey"} {
		if strings.HasSuffix(w, suffix) && len(w) > len(suffix) {
			return keyToken
		}
	}
	return keyPlain
}

// splitWords splits a name into lowercase words at separators and at
// camelCase boundaries: "X-Api-Key" -> x api key, "AWSSecretAccessKey" ->
// aws secret access key, "client_secret" -> client secret.
func splitWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r):
			if unicode.IsUpper(r) && len(cur) > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					flush()
				}
			}
			cur = append(cur, r)
		case unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return words
}

// passIsCount reports whether name's only password word is "pass", whose
// numbers are counts ({"pass": 12, "fail": 0}) rather than passwords.
func passIsCount(name string) bool {
	pass := false
	for _, w := range splitWords(name) {
		if passwordWords[w] && w != "pass" {
			return false
		}
		pass = pass || w == "pass"
	}
	return pass
}
