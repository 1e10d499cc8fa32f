package recap

import (
	"fmt"
	"strings"
	"testing"
)

// The key-name set: names that hold a secret word before a suffix
// ("private_key_id", "clientSecretId", "X-Api-Key-Id"), secret names with
// no suffix, and look-alikes (plain identifiers such as "client_id" and
// names about a secret such as "token_count"), each written in the case
// style of the place it stands in (JSON, YAML, .env, TOML, INI, Java
// properties, HTTP headers, flags, Go, Python and JS source) and given
// values of several shapes. The set in keynames_heldback_test.go was
// written at the same time and run only once the rules were done.

// Name strengths: what a name marks.
const (
	nameAbout    = "about"    // about a secret (a suffix after the secret word): key material is secret, words and numbers are not
	nameToken    = "token"    // a credential-like value is secret
	namePassword = "password" // any value but a placeholder is secret
)

// keyName is a name as its words, with what it marks.
type keyName struct {
	words    []string
	strength string
}

// lookName is a name whose values must stay readable.
type lookName struct {
	words  []string
	values []string
}

func kn(strength string, name string) keyName { return keyName{strings.Fields(name), strength} }
func ln(name string, values ...string) lookName {
	return lookName{strings.Fields(name), values}
}

// Case styles.
func snake(w []string) string     { return strings.Join(w, "_") }
func screaming(w []string) string { return strings.ToUpper(snake(w)) }
func kebab(w []string) string     { return strings.Join(w, "-") }
func dotted(w []string) string    { return strings.Join(w, ".") }
func camel(w []string) string     { return w[0] + pascal(w[1:]) }
func pascal(w []string) string {
	var b strings.Builder
	for _, x := range w {
		if x == "id" || x == "url" || x == "api" {
			b.WriteString(strings.ToUpper(x)) // privateKeyID, APIKey, tokenURL
			continue
		}
		b.WriteString(strings.ToUpper(x[:1]) + x[1:])
	}
	return b.String()
}
func train(w []string) string { // X-Private-Key-Id
	parts := make([]string, len(w))
	for i, x := range w {
		parts[i] = strings.ToUpper(x[:1]) + x[1:]
	}
	return strings.Join(parts, "-")
}

// litOf writes v as a literal of a language: numbers and booleans bare.
func litOf(v, quote string) string {
	if isDigits(v) || v == "true" || v == "false" {
		return v
	}
	return quote + v + quote
}

// placeAt is one place a name and its value stand in: it writes the text
// and the fragment (the name through the value) that a look-alike keeps.
type placeAt struct {
	where  string
	json   bool // the text is one JSON document, also read by RedactJSON
	render func(words []string, v string) (text, keep string)
}

func keyPlaces() []placeAt {
	one := func(where string, json bool, f func(w []string, v string) string, frame string) placeAt {
		return placeAt{where, json, func(w []string, v string) (string, string) {
			keep := f(w, v)
			return strings.Replace(frame, "@", keep, 1), keep
		}}
	}
	return []placeAt{
		one("json inline", true, func(w []string, v string) string { return `"` + snake(w) + `": ` + litOf(v, `"`) }, `{"service": "api", @, "region": "eu-west-1"}`),
		one("json pretty camel", true, func(w []string, v string) string { return `"` + camel(w) + `": ` + litOf(v, `"`) }, "{\n  \"kind\": \"config\",\n  @,\n  \"retries\": 3\n}"),
		one("yaml", false, func(w []string, v string) string { return snake(w) + ": " + v }, "app:\n  name: api\n  @\n  region: eu-west-1\n"),
		one("yaml kebab quoted", false, func(w []string, v string) string { return kebab(w) + `: "` + v + `"` }, "config:\n  @\n  mode: prod\n"),
		one("dotenv", false, func(w []string, v string) string { return screaming(w) + "=" + v }, "HOME=/home/dev\n@\nLANG=C.UTF-8\n"),
		one("export", false, func(w []string, v string) string { return "export " + screaming(w) + `="` + v + `"` }, "@\n"),
		one("toml", false, func(w []string, v string) string { return snake(w) + " = " + litOf(v, `"`) }, "[service]\nname = \"api\"\n@\n"),
		one("ini", false, func(w []string, v string) string { return snake(w) + " = " + v }, "[default]\nregion = eu-west-1\n@\noutput = json\n"),
		one("java properties", false, func(w []string, v string) string { return "app.gcp." + dotted(w) + "=" + v }, "server.port=8080\n@\n"),
		one("http header", false, func(w []string, v string) string { return train(w) + ": " + v }, "> GET /v1/items HTTP/1.1\n> Host: api.example.com\n> @\n> Accept: */*\n"),
		one("flag =", false, func(w []string, v string) string { return "--" + kebab(w) + "=" + v }, "tool deploy @ --region eu-west-1"),
		one("flag space", false, func(w []string, v string) string { return "--" + kebab(w) + " " + v }, "tool deploy @ --verbose"),
		one("go struct", false, func(w []string, v string) string { return pascal(w) + ": " + litOf(v, `"`) + "," }, "cfg := Config{\n\tName: \"api\",\n\t@\n}"),
		one("go var", false, func(w []string, v string) string { return camel(w) + " := " + litOf(v, `"`) }, "func main() {\n\t@\n\trun()\n}"),
		one("python kwargs", false, func(w []string, v string) string { return snake(w) + "=" + litOf(v, `"`) }, "client = Client(region=\"eu\", @)"),
		one("python assign", false, func(w []string, v string) string { return "self." + snake(w) + " = " + litOf(v, `'`) }, "def __init__(self):\n    @\n"),
		one("js const", false, func(w []string, v string) string { return "const " + camel(w) + " = " + litOf(v, `'`) + ";" }, "@\nexport default run;"),
		one("js object", false, func(w []string, v string) string { return camel(w) + ": " + litOf(v, `"`) }, "module.exports = { region: \"eu\", @ };"),
	}
}

// keyValueShapes are the values given to secret names: key material of
// several shapes, and for password names short words too.
type valueShape struct{ shape, v string }

func keyValueShapes(tag, strength string) []valueShape {
	shapes := []valueShape{
		{"hex", fake(tag+"hex", hexLow, 40)},
		{"uuid", fake(tag+"u1", hexLow, 8) + "-" + fake(tag+"u2", hexLow, 4) + "-4" + fake(tag+"u3", hexLow, 3) + "-a" + fake(tag+"u4", hexLow, 3) + "-" + fake(tag+"u5", hexLow, 12)},
		{"base64", fake(tag+"b64", alnum, 30) + "+" + fake(tag+"b64b", alnum, 9) + "="},
		{"alnum", fake(tag+"an", alnum, 20) + "7Q"},
	}
	if strength == namePassword {
		shapes = append(shapes, valueShape{"word", "swordfish" + fake(tag+"w", "abcdefgh", 3)})
	}
	return shapes
}

// keyNameResult counts what a set gives.
type keyNameResult struct {
	secrets, caught  int
	looks, untouched int
	failures         []string
}

// runKeyNames runs every secret name with every value shape and every
// look-alike name with its values in every place through Redact, through
// RedactJSON for JSON documents, and through the recap request as a
// tool's output. A secret is caught when no 8-character piece of it is
// left in any of them; a look-alike is untouched when its fragment is
// left whole in all of them.
func runKeyNames(t *testing.T, set string, places []placeAt, secrets []keyName, looks []lookName, shapes func(tag, strength string) []valueShape) keyNameResult {
	t.Helper()
	var r keyNameResult
	outputs := func(p placeAt, text string) []string {
		outs := []string{first(Redact(text))}
		if p.json {
			outs = append(outs, first(RedactJSON([]byte(text))))
		}
		return append(outs, prompt(t, runSession(t, "go", "cat config", text)))
	}
	for _, p := range places {
		for _, n := range secrets {
			for _, sh := range shapes(set+p.where+strings.Join(n.words, " "), n.strength) {
				text, _ := p.render(n.words, sh.v)
				r.secrets++
				ok := true
				for _, out := range outputs(p, text) {
					if leaked(out, sh.v) {
						ok = false
						r.failures = append(r.failures, fmt.Sprintf("secret %q (%s, %s) reaches the request: %q", strings.Join(n.words, " "), p.where, sh.shape, excerpt(out, sh.v)))
						break
					}
				}
				if ok {
					r.caught++
				}
			}
		}
		for _, n := range looks {
			for _, v := range n.values {
				text, keep := p.render(n.words, v)
				r.looks++
				ok := true
				for _, out := range outputs(p, text) {
					if !strings.Contains(out, keep) {
						ok = false
						r.failures = append(r.failures, fmt.Sprintf("look-alike %q (%s) is changed: %q in %q", strings.Join(n.words, " "), p.where, keep, first(Redact(text))))
						break
					}
				}
				if ok {
					r.untouched++
				}
			}
		}
	}
	return r
}

// Documents whose keys mark their secrets: what must go and what must
// stay, read as a tool's output and as JSON.
type keyDoc struct {
	name       string
	text       string
	secrets    []string
	keep       []string
	jsonValues bool
}

func runKeyDocs(t *testing.T, docs []keyDoc) keyNameResult {
	t.Helper()
	var r keyNameResult
	for _, d := range docs {
		outs := []string{first(Redact(d.text)), prompt(t, runSession(t, "go", "cat key.json", d.text))}
		if d.jsonValues {
			outs = append(outs, first(RedactJSON([]byte(d.text))))
		}
		for _, s := range d.secrets {
			r.secrets++
			ok := true
			for _, out := range outs {
				if leaked(out, s) {
					ok = false
					r.failures = append(r.failures, fmt.Sprintf("%s: secret %q reaches the request: %q", d.name, s, excerpt(out, s)))
					break
				}
			}
			if ok {
				r.caught++
			}
		}
		for _, k := range d.keep {
			r.looks++
			ok := true
			for _, out := range outs {
				if !strings.Contains(out, k) {
					ok = false
					r.failures = append(r.failures, fmt.Sprintf("%s: %q is changed: %s", d.name, k, first(Redact(d.text))))
					break
				}
			}
			if ok {
				r.untouched++
			}
		}
	}
	return r
}

var (
	pkID      = fake("sa-pkid", hexLow, 40)
	saPEMBody = fake("sa-pem", b64Std, 64)
)

// devKeySecrets are the secret names of the set the rules were built on.
var devKeySecrets = []keyName{
	// A secret word before a suffix: key material under the name is secret.
	kn(nameAbout, "private key id"),
	kn(nameAbout, "secret id"),
	kn(nameAbout, "client secret id"),
	kn(nameAbout, "api key id"),
	kn(nameAbout, "access key id"),
	kn(nameAbout, "session token id"),
	kn(nameAbout, "token id"),
	kn(nameAbout, "auth token id"),
	kn(nameAbout, "secret key id"),
	kn(nameAbout, "private key ref"),
	kn(nameAbout, "api keys"),
	kn(nameAbout, "token key"),
	// Secret names.
	kn(nameToken, "client secret"),
	kn(nameToken, "api key"),
	kn(nameToken, "x api key"),
	kn(nameToken, "auth token"),
	kn(nameToken, "secret access key"),
	kn(nameToken, "refresh token"),
	kn(nameToken, "webhook secret"),
	kn(namePassword, "password"),
	kn(namePassword, "db password"),
	kn(namePassword, "passwd"),
}

// devKeyLooks are its look-alikes.
var devKeyLooks = []lookName{
	// Identifiers.
	ln("client id", "7c1e3c2a-9b4d-4e8f-a1c6-2b7e9f0a1b2c", "112233445566778899001", "3f1e7c2a9b4d4e8fa1c6d2b7e9f0a1b2"),
	ln("project id", "acme-prod-123456"),
	ln("key id", "3f1e7c2a9b4d4e8fa1c6d2b7e9f0a1b2c3d4e5f6", "1234abcd-12ab-34cd-56ef-1234567890ab"),
	ln("session id", "01a22bc0-1a36-74a5-80f2-9894ba8d6c2a"),
	ln("user id", "9b2f6a1e-4c3d-4e8f-b1a2-c3d4e5f6a7b8"),
	ln("request id", "req_8f3a2b1c9d4e5f6a7b8c"),
	ln("commit id", "3f5a9c2e8b1d4f6a7c9e0b2d4f6a8c0e2b4d6f8a"),
	ln("tenant id", "72f988bf-86f1-41af-91ab-2d7cd011db47"),
	ln("trace id", "4bf92f3577b34da6a3ce929d0e0e4736"),
	ln("installation id", "12345678"),
	// About a secret, with what such names hold.
	ln("token count", "1234"),
	ln("max tokens", "4096"),
	ln("max token", "1000000"),
	ln("password min length", "12"),
	ln("tokenizer", "cl100k_base"),
	ln("secretary name", "Jane"),
	ln("token type", "Bearer"),
	ln("auth method", "oidc"),
	ln("secret name", "db-creds"),
	ln("token ttl", "3600"),
	ln("password file", "/run/secrets/db"),
	ln("token url", "https://oauth2.googleapis.com/token"),
	ln("auth enabled", "true"),
	ln("secret id", "my-db-secret"),
	ln("private key id", "null"),
	ln("token expiry", "2026-12-01T10:00:00Z"),
}

// devKeyDocs are whole documents.
var devKeyDocs = []keyDoc{
	{
		name: "gcp service account",
		text: `{
  "type": "service_account",
  "project_id": "acme-prod-123456",
  "private_key_id": "` + pkID + `",
  "private_key": "-----BEGIN PRIVATE KEY-----\n` + saPEMBody + `\n-----END PRIVATE KEY-----\n",
  "client_email": "ci@acme-prod-123456.iam.gserviceaccount.com",
  "client_id": "112233445566778899001",
  "auth_uri": "https://accounts.google.com/o/oauth2/auth",
  "token_uri": "https://oauth2.googleapis.com/token",
  "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
  "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/ci%40acme-prod-123456.iam.gserviceaccount.com",
  "universe_domain": "googleapis.com"
}`,
		secrets:    []string{pkID, saPEMBody},
		keep:       []string{`"project_id": "acme-prod-123456"`, `"client_id": "112233445566778899001"`, `"token_uri": "https://oauth2.googleapis.com/token"`, `"auth_uri": "https://accounts.google.com/o/oauth2/auth"`, `"client_email": "ci@acme-prod-123456.iam.gserviceaccount.com"`, `"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs"`},
		jsonValues: true,
	},
	{
		name:    "vault approle",
		text:    "$ vault write -f auth/approle/role/ci/secret-id\nKey                   Value\n---                   -----\nsecret_id             " + fake("approle", hexLow, 8) + "-1a2b-4c3d-8e9f-" + fake("approle2", hexLow, 12) + "\nsecret_id_accessor    84896a0c-1347-aa90-a4f6-aca8b7558780\nsecret_id_num_uses    0\nsecret_id_ttl         0s",
		secrets: []string{fake("approle2", hexLow, 12)},
		keep:    []string{"secret_id_num_uses    0", "secret_id_ttl         0s"},
	},
	{
		name:       "lists under a name about a secret, objects beside",
		text:       `{"private_key_ids": ["` + fake("pkids1", hexLow, 40) + `", "` + fake("pkids2", hexLow, 40) + `"], "token_usage": {"prompt_tokens": 1200, "cache_key": "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"}, "secret_refs": [{"name": "db", "id": "5d2e8f1a-3b4c-4d5e-9f6a-7b8c9d0e1f2a"}]}`,
		secrets:    []string{fake("pkids1", hexLow, 40), fake("pkids2", hexLow, 40)},
		keep:       []string{`"prompt_tokens": 1200`, `"cache_key": "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"`, `"id": "5d2e8f1a-3b4c-4d5e-9f6a-7b8c9d0e1f2a"`},
		jsonValues: true,
	},
}

func TestKeyNames(t *testing.T) {
	r := runKeyNames(t, "dev", keyPlaces(), devKeySecrets, devKeyLooks, keyValueShapes)
	d := runKeyDocs(t, devKeyDocs)
	for _, f := range append(r.failures, d.failures...) {
		t.Error(f)
	}
	t.Logf("key names (dev): %d/%d secrets caught, %d/%d look-alikes untouched; documents: %d/%d secrets caught, %d/%d kept",
		r.caught, r.secrets, r.untouched, r.looks, d.caught, d.secrets, d.untouched, d.looks)
}
