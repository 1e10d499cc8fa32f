package recap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/session"
)

// The redaction suite: secrets in the shapes they take in agent sessions,
// and look-alikes that must stay readable. All secrets are fake, made for
// this file.

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// wrapLines breaks s into lines of n characters, as base64 and terminals do.
func wrapLines(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	return b.String() + s
}

const (
	pemRSA = `-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAv3xNqmT1kXq8yZ0pJ5rLw2aBcDeFgHiJkLmNoPqRsTuVwXyZ
Q9wErTyUiOpAsDfGhJkLzXcVbNm1234567890AbCdEfGhIjKlMnOpQrStUvWxYz0
-----END RSA PRIVATE KEY-----`
	pemOpenSSH = `-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDqK7pZr4XvN2mB8sT1wQeYhUjIkOlPaSdFgHjKlZxCvBnMAAAAoH5tZx9+
-----END OPENSSH PRIVATE KEY-----`
	pemECCut = `$ head -3 ec.pem
-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5owyYl7rqN5uYoAoGCCqGSM49
AwEHoUQDQgAE8ZqvR3kXf7HnQmT2wLcY9pJsAbCdEfGhIjKlMnOpQrStUvWxYz01`
	pemPGP = `-----BEGIN PGP PRIVATE KEY BLOCK-----

lQOYBGXyZ3kBCADk7Qm4r8VbN2pLs9tYhUjIkOlPaSdFgHjKlZxCvBnMqWeRtYuI
=Ab3x
-----END PGP PRIVATE KEY BLOCK-----`
)

type secretCase struct {
	name   string
	text   string // the secret in context, as a tool prints it or a command holds it
	secret string // what must not reach the prompt
}

var secretCases = []secretCase{
	// Provider formats.
	{"aws access key id", "AWS_ACCESS_KEY_ID=AKIAQ3EGT5LKJ7PXWZ2M", "AKIAQ3EGT5LKJ7PXWZ2M"},
	{"aws secret access key", "aws_secret_access_key = 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", "Dm7ena8D5VfLDpgyyjVw5HanSBeVRsfAGeAbP0Vx"},
	{"aws session key id", "export AWS_SESSION=ASIAXK4YTQH2VB7N3RDM", "ASIAXK4YTQH2VB7N3RDM"},
	{"github classic", "remote: token ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d accepted", "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"},
	{"github oauth", `{"token":"gho_KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFR","scope":"repo"}`, "gho_KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFR"},
	{"github app in url", "git clone https://x-access-token:ghs_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7@github.com/acme/api.git", "ghs_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7"},
	{"github fine-grained", "GH_PAT 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", "Ty4Qwb8DwkNhFdnXsiVpzz63FfkCzJr4i0B3JrTAwR4y9ojfljoQoaF1Llq"},
	{"gitlab", "gitlab token: glpat-sajAIxNKu8iS2G8NPRVd", "glpat-sajAIxNKu8iS2G8NPRVd"},
	{"slack bot", "SLACK=xoxb-284716593012-1948572036148-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-284716593012-1948572036148-AbCdEfGhIjKlMnOpQrStUvWx"},
	{"slack webhook", "posting to https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/aBcDeFgHiJkLmNoPqRsTuVwX", "aBcDeFgHiJkLmNoPqRsTuVwX"},
	{"stripe live", "Stripe.api_key = 'sk_live_51NtencYFJEeAgYzQJjOIfPkzSrAsQtA9dtVK4wAAb3XZx'", "sk_live_51NtencYFJEeAgYzQJjOIfPkzSrAsQtA9dtVK4wAAb3XZx"},
	{"stripe restricted", "using rk_live_51PmzUzn8aB5kBh0fzK4xDXkiadJjPZ6zfKN7xVGk", "rk_live_51PmzUzn8aB5kBh0fzK4xDXkiadJjPZ6zfKN7xVGk"},
	{"openai project", "OpenAI(api_key=\"sk-proj-D53X83RZJzzzzgEOzdmenCkhvMdgaKjIg8xNbe3nNyjOq9wM\")", "D53X83RZJzzzzgEOzdmenCkhvMdgaKjIg8xNbe3nNyjOq9wM"},
	{"anthropic", "ANTHROPIC_API_KEY: sk-ant-api03-xEhh2FDEEtfjgVvVqE1SkHbn88HxjSI6bWHtP3fS2qHx6kwXoIIXGvOoNZYW2mZp0zVZomHFwUbbYrEq", "xEhh2FDEEtfjgVvVqE1SkHbn88HxjSI6bWHtP3fS2qHx6kwXoIIXGvOoNZYW2mZp"},
	{"openrouter", "key 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 loaded", "737f6a6f0fb23c6f5da2cec255404e4fb440034d6608697a8d41bed440e50454"},
	{"google api key", "https://maps.googleapis.com/maps/api/geocode/json?address=x&key=AIzaENUhJduRHHJEYXg4JdpmrcXgGCJbW56eCuN", "AIzaENUhJduRHHJEYXg4JdpmrcXgGCJbW56eCuN"},
	{"google oauth secret", `"client_secret":"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"`, "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"},
	{"google access token", "gcloud auth print-access-token\nya29.a0AfBiAhzCueQpBenQtYh5Xj8TPQxjq4i9DoV8gz4FkQ1okTBGzvAm", "a0AfBiAhzCueQpBenQtYh5Xj8TPQxjq4i9DoV8gz4FkQ1okTBGzvAm"},
	{"sendgrid", "SENDGRID=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", "rWi0B26R08qzjI6GKFSufrdZSlB5er8bOfZqfM2oeq3"},
	{"npm", "//registry.npmjs.org/:_authToken=npm_hDavJA76rNicHTp8hkqdlm7tOtHWnsCGRlrw", "npm_hDavJA76rNicHTp8hkqdlm7tOtHWnsCGRlrw"},
	{"pypi", "password = pypi-AgEIcHlwaS5vcmcmti18c6EudM7Oyf5TNS05kOY2oNzN2m1ElKncz8HkywhjpU05mc4J1WRcQ1uhyMDJ2OXtP", "mti18c6EudM7Oyf5TNS05kOY2oNzN2m1ElKncz8HkywhjpU05"},
	{"hugging face", "huggingface-cli login --token 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", "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"},
	{"digitalocean", "doctl auth init -t dop_v1_b14028d512c9791e558e08baa7196b50ac2f86702824c1c099724caf4941d407", "b14028d512c9791e558e08baa7196b50ac2f86702824c1c099724caf4941d407"},
	{"shopify", "X-Shopify-Access-Token: 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", "2014b3ce107f80e222f828767efc2f91"},
	{"mailgun", "api:key-624a8940f1f836f99eee3692f09e2e8c", "624a8940f1f836f99eee3692f09e2e8c"},
	{"twilio", "twilio api key SK662248b483b7ffc050fec94dbca3a0aa created", "SK662248b483b7ffc050fec94dbca3a0aa"},
	{"telegram bot", "bot 7348291056:AA1zh87mTa5Vsqxezy3Lex7BWr2drgd1QsO ready", "1zh87mTa5Vsqxezy3Lex7BWr2drgd1QsO"},
	{"databricks", "DATABRICKS_HOST=x DATABRICKS=dapi478da6bd0c621de49f145fda9988c79f", "dapi478da6bd0c621de49f145fda9988c79f"},
	{"age", "# secret key: AGE-SECRET-KEY-19ZHKKEN659O2V21I9MPFLV9FUPXQMB0Y07NYRVD5RXI67NFRPYZ21TBIC1", "9ZHKKEN659O2V21I9MPFLV9FUPXQMB0Y07NYRVD5RXI67NFRPYZ21TBIC1"},
	{"vault", "vault login hvs.TW5ZE9LFaez7770H2DCpYgojjHRg80USP2W5DfJXcaYioK6cPTt9", "TW5ZE9LFaez7770H2DCpYgojjHRg80USP2W5DfJXcaYioK6cPTt9"},
	{"doppler", "doppler token dp.pt.b9ATPtdbmF4RPAfqoQB7xoFcSvTAxRzmaZsV2GenFmt", "b9ATPtdbmF4RPAfqoQB7xoFcSvTAxRzmaZsV2GenFmt"},
	{"linear", "LINEAR lin_api_X0moDoqW4sg8NFNl5oFA6Qd8Mj7zdnbMjAdTdlzC", "X0moDoqW4sg8NFNl5oFA6Qd8Mj7zdnbMjAdTdlzC"},
	{"postman", "x PMAK-a325a65e19cbae530282bd36-cb9d21f6be6abf0d7c1c1e21862ab8a18a", "cb9d21f6be6abf0d7c1c1e21862ab8a18a"},
	{"supabase", "supabase login --token sbp_8902073fec8df4f50947aaeb26c57d21fa5d3282", "8902073fec8df4f50947aaeb26c57d21fa5d3282"},
	{"groq", "GROQ 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", "ngAFTCloiADN5RpVI2XQWhX1ssrKrxqVqmCplppjs46LmuezqpGH"},
	{"jwt", "session eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	// Private keys.
	{"pem rsa", pemRSA, "MIIEowIBAAKCAQEAv3xNqmT1kXq8yZ0pJ5rLw2aBcDeFgHiJkLmNoPqRsTuVwXyZ"},
	{"openssh", pemOpenSSH, "QyNTUxOQAAACDqK7pZr4XvN2mB8sT1wQeYhUjIkOlPaSdFgHjKlZxCvBnMAAAAoH5tZx9+"},
	{"ec key cut short", pemECCut, "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5owyYl7rqN5uYoAoGCCqGSM49"},
	{"pgp", pemPGP, "lQOYBGXyZ3kBCADk7Qm4r8VbN2pLs9tYhUjIkOlPaSdFgHjKlZxCvBnMqWeRtYuI"},
	// Credentials in URLs and connection strings.
	{"postgres url", "DATABASE_URL=postgres://app:Vq8#pLm2Zr@db.internal:5432/app", "Vq8#pLm2Zr"},
	{"mongodb srv", "mongosh \"mongodb+srv://admin:Xk29LmPq77@cluster0.ab1cd.mongodb.net/test\"", "Xk29LmPq77"},
	{"redis url", "REDIS=redis://:R3d1sPassw0rd@cache:6379/0", "R3d1sPassw0rd"},
	{"https basic", "curl https://deploy:Wp4#sNq91z@ci.example.com/hook", "Wp4#sNq91z"},
	{"amqp", "broker amqp://guest:Gu3stP4ssX@rabbit:5672//", "Gu3stP4ssX"},
	{"access token param", "GET /api/me?access_token=Pchv5V7S82qTdrOJRBRY6HqsP795nf4G&fields=id", "Pchv5V7S82qTdrOJRBRY6HqsP795nf4G"},
	{"s3 presigned", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=0b93b7d946bf54074e3248c801bef750110c57513064d6d59291f0cde2e57387", "0b93b7d946bf54074e3248c801bef750110c57513064d6d59291f0cde2e57387"},
	{"azure sas", "https://acct.blob.core.windows.net/c/f?sv=2021-08-06&sp=r&sig=2xD%2Fnbux0BwxIfvifUn0z%2BrLKq%2FJuO44ENVZnM%3D", "2xD%2Fnbux0BwxIfvifUn0z"},
	{"ado connection string", "Server=tcp:db,1433;Database=app;User Id=sa;Password=Adm1n!Pass#22;Encrypt=true", "Adm1n!Pass#22"},
	{"azure storage", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=2xD/nbux0BwxIfvifUn0z+rLKq/JuO44ENVZnMFAKFLlnUbn0HQkQYD263o1l0OdgTxRXwkyLmcpou9HrVPlYA==;EndpointSuffix=core.windows.net", "2xD/nbux0BwxIfvifUn0z+rLKq"},
	// Headers.
	{"bearer header", "Authorization: Bearer Pchv5V7S82qTdrOJRBRY6HqsP795nf4G", "Pchv5V7S82qTdrOJRBRY6HqsP795nf4G"},
	{"basic header", "Authorization: Basic " + b64("deploy:Sup3rS3cret!"), b64("deploy:Sup3rS3cret!")},
	{"token header hex", "Authorization: token 5831be38cb8cb4ba2e751989a01749ddb14f7101", "5831be38cb8cb4ba2e751989a01749ddb14f7101"},
	{"api key header", "X-Api-Key: 7f3Kq9Lm2Np8Rs4Tv6Wx", "7f3Kq9Lm2Np8Rs4Tv6Wx"},
	{"cookie header", "Cookie: session=s%3AQ9wErTyUiOpAsDfGh.k2; theme=dark", "s%3AQ9wErTyUiOpAsDfGh"},
	{"curl header", "curl -H 'Authorization: Bearer 9fG2kL7mQ4rT8vX1zB6nC3' https://api.example.com", "9fG2kL7mQ4rT8vX1zB6nC3"},
	{"bearer in prose", "then call it with Bearer 4rT8vX1zB6nC39fG2kL7mQ as the header", "4rT8vX1zB6nC39fG2kL7mQ"},
	// Assignments with secret-like names.
	{"dotenv", "DB_PASSWORD=Tr0ub4dor&3-horse", "Tr0ub4dor&3-horse"},
	{"export opaque token", "export GITHUB_TOKEN=5831be38cb8cb4ba2e751989a01749ddb14f7101", "5831be38cb8cb4ba2e751989a01749ddb14f7101"},
	{"yaml", "database:\n  user: app\n  password: \"c0rrect-h0rse-battery\"\n", "c0rrect-h0rse-battery"},
	{"json in text", `{"service":"x","apiKey":"Zq7Wm3Xp9Lk2Vn8Bc4Rt"}`, "Zq7Wm3Xp9Lk2Vn8Bc4Rt"},
	{"xml", "<datasource><password>Xml!Secret99</password></datasource>", "Xml!Secret99"},
	{"ini", "[default]\nsecret_key = 8Hj3Kl9Qw2Er7Ty5Ui1O", "8Hj3Kl9Qw2Er7Ty5Ui1O"},
	{"powershell", `$env:API_KEY = "Ps9Kx2Lm7Qw4Er8Ty3Ui"`, "Ps9Kx2Lm7Qw4Er8Ty3Ui"},
	{"go", `token := "Go7Tk3nVal9Qw2Er5Ty8"`, "Go7Tk3nVal9Qw2Er5Ty8"},
	{"php", `'password' => 'Ph9Pw2Lm7Qw4',`, "Ph9Pw2Lm7Qw4"},
	{"spring", "spring.datasource.password=Spr1ngBoot#Pw", "Spr1ngBoot#Pw"},
	{"comparison", `if password == "Cmp4r3dS3cret" {`, "Cmp4r3dS3cret"},
	// Command lines, in their spellings.
	{"mysql -p attached", "mysql -u root -pMyS3cretPw! app", "MyS3cretPw!"},
	{"mysql -p separate", "mysql -h db -u root -p S3parat3Pw app", "S3parat3Pw"},
	{"mysql --password=", "mysqldump --user=root --password=Dump3rPw99 app > dump.sql", "Dump3rPw99"},
	{"pgpassword", "PGPASSWORD=Pg5ecretPw psql -h db -U app", "Pg5ecretPw"},
	{"sshpass", "sshpass -p 'Ssh P4ss Phrase' ssh deploy@host", "Ssh P4ss Phrase"},
	{"docker login", "docker login -u bot -p D0ckerHubPw9 registry.example.com", "D0ckerHubPw9"},
	{"redis-cli", "redis-cli -h cache -p 6379 -a R3disCliPw", "R3disCliPw"},
	{"curl -u", "curl -u admin:Cu7lP4ssword https://api.example.com", "Cu7lP4ssword"},
	{"curl --user", "curl --user admin:Cu7lUs3rPw https://api.example.com", "Cu7lUs3rPw"},
	{"wget", "wget --http-user=u --http-password=Wg3tPassw0rd https://x", "Wg3tPassw0rd"},
	{"zip -P", "zip -P Z1pArch1vePw secret.zip notes.txt", "Z1pArch1vePw"},
	{"7z -p", "7z a -p7zArch1vePw backup.7z dir", "7zArch1vePw"},
	{"sqlcmd", "sqlcmd -S db -U sa -P SqlCmdPw77 -Q \"select 1\"", "SqlCmdPw77"},
	{"ldapsearch", "ldapsearch -x -D cn=admin,dc=example -w LdapB1ndPw -b dc=example", "LdapB1ndPw"},
	{"openssl pass:", "openssl rsa -in key.pem -passin pass:OpenSslPw42 -out plain.pem", "OpenSslPw42"},
	{"keytool", "keytool -list -keystore app.jks -storepass K3yst0rePw", "K3yst0rePw"},
	{"smbclient", "smbclient //fs/share -U backup%SmbCl1entPw", "SmbCl1entPw"},
	{"netrc", "machine api.example.com login deploy password N3trcPassw0rd", "N3trcPassw0rd"},
	{"xfreerdp", "xfreerdp /v:host /u:admin /p:Rdp!Passw0rd", "Rdp!Passw0rd"},
	{"--api-key value", "llm --api-key Ak9Zq2Wm7Xp3Lk8Vn4Bc prompt", "Ak9Zq2Wm7Xp3Lk8Vn4Bc"},
	{"--token=", "gh auth login --token=T0kFlag9Zq2Wm7Xp3Lk8", "T0kFlag9Zq2Wm7Xp3Lk8"},
	{"argv array", `spawn("deploy", ["--password", "Argv9Pw2Lm7Q", "--verbose"])`, "Argv9Pw2Lm7Q"},
	{"htpasswd", "htpasswd -bc .htpasswd admin Htp4sswdPw", "Htp4sswdPw"},
	{"sh -c", `sh -c "mysql -uroot -pN3st3dPw9 app"`, "N3st3dPw9"},
	// Wrapped across lines, split across literals.
	{"wrapped github", "token: ghp_u8jzPde0IgxLd6Gnc\nfBAepfJBd0Kh8oOOL8d", "fBAepfJBd0Kh8oOOL8d"},
	{"wrapped aws", "key AKIAQ3EGT5\n  LKJ7PXWZ2M", "LKJ7PXWZ2M"},
	{"wrapped jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwi\nbmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"split literals +", `const k = "sk-ant-api03-xEhh2FDEEtfjgVvVqE1Sk" + "Hbn88HxjSI6bWHtP3fS2qHx6kwXoIIXGvOoNZY";`, "Hbn88HxjSI6bWHtP3fS2qHx6kwXoIIXGvOoNZY"},
	{"split literals python", "key = (\"ghp_u8jzPde0IgxLd6Gncf\"\n       \"BAepfJBd0Kh8oOOL8d\")", "BAepfJBd0Kh8oOOL8d"},
	{"split password +", `db.connect(password = "Spl1tPa" + "rtTw0Pw")`, "rtTw0Pw"},
	{"shell continuation", "export API_TOKEN=Cont1nu3dT0k3n\\\n    Part2Xy9", "Part2Xy9"},
	// Base64-encoded.
	{"base64 of assignment", "echo " + b64("password=B4s3SixtyFour!") + " | base64 -d", b64("password=B4s3SixtyFour!")},
	{"base64 of aws key", "data: " + b64("aws_secret_access_key=Dm7ena8D5VfLDpgyyjVw5HanSBeVRsfAGeAbP0Vx"), b64("aws_secret_access_key=Dm7ena8D5VfLDpgyyjVw5HanSBeVRsfAGeAbP0Vx")[:40]},
	{"base64 of json", "payload " + b64(`{"user":"ci","apiKey":"B64J5onK3yZq7Wm3Xp9L"}`), b64(`{"user":"ci","apiKey":"B64J5onK3yZq7Wm3Xp9L"}`)[16:48]},
	{"base64 pem wrapped", wrapLines(b64(pemRSA), 76), b64(pemRSA)[40:76]},
	{"kubeconfig client key", "    client-key-data: " + b64(pemRSA), b64(pemRSA)[8:48]},
	{"docker auth", `{"auths":{"registry.example.com":{"auth":"` + b64("bot:D0ckerAuthPw") + `"}}}`, b64("bot:D0ckerAuthPw")},
}

type lookAlike struct {
	name string
	text string
	keep string // must survive
}

var lookAlikes = []lookAlike{
	{"commit id", "commit 3f5a9c2e8b1d4f6a7c9e0b2d4f6a8c0e2b4d6f8a (HEAD -> main)", "3f5a9c2e8b1d4f6a7c9e0b2d4f6a8c0e2b4d6f8a"},
	{"short commit", "HEAD is now at 3f5a9c2 fix the build", "3f5a9c2 fix the build"},
	{"sha256", "sha256sum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  app.tar.gz", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	{"md5", "md5 d41d8cd98f00b204e9800998ecf8427e", "d41d8cd98f00b204e9800998ecf8427e"},
	{"uuid", "request id 550e8400-e29b-41d4-a716-446655440000 failed", "550e8400-e29b-41d4-a716-446655440000"},
	{"uuid v7 session", "session 01a22bc0-1a36-74a5-80f2-9894ba8d6c2a resumed", "01a22bc0-1a36-74a5-80f2-9894ba8d6c2a"},
	{"versions", "pi v1.6.0 on node v22.19.0 built with go1.26.8", "pi v1.6.0 on node v22.19.0 built with go1.26.8"},
	{"image digest", "image@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	{"npm integrity", `"integrity": "sha512-Z9Hg0vJmnAvRxZ8xSfpmUuK2rG5Kn8xVr1JgAuQ6nX0YhQ3vR9j8dG2pB6mW4tS1cE7qL0oN5iU3yT9aF8kD2w=="`, "sha512-Z9Hg0vJmnAvRxZ8xSfpmUuK2rG5Kn8xVr1JgAuQ6nX0YhQ3vR9j8dG2pB6mW4tS1cE7qL0oN5iU3yT9aF8kD2w=="},
	{"go.sum", "github.com/google/go-cmp v0.7.0 h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=", "h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8="},
	{"go pseudo-version", "golang.org/x/tools v0.0.0-20240101000000-abcdef123456", "v0.0.0-20240101000000-abcdef123456"},
	{"base64 of prose", "README " + b64("This is an ordinary sentence from the README of the project."), b64("This is an ordinary sentence from the README of the project.")},
	{"base64 of json", "meta " + b64(`{"name":"demo","version":"1.0.0","private":true}`), b64(`{"name":"demo","version":"1.0.0","private":true}`)},
	{"certificate authority data", "    certificate-authority-data: " + b64("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n"), b64("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n")},
	{"ssh public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOqK7pZr4XvN2mB8sT1wQeYhUjIkOlPaSdFgHjKlZxCv deploy@ci", "AAAAC3NzaC1lZDI1NTE5AAAAIOqK7pZr4XvN2mB8sT1wQeYhUjIkOlPaSdFgHjKlZxCv"},
	{"public key pem", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8ZqvR3kXf7HnQmT2wLcY9pJs\n-----END PUBLIC KEY-----", "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8ZqvR3kXf7HnQmT2wLcY9pJs"},
	{"certificate pem", "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ9wErTyUiOpAsDfGhJkLzXcVbNm\n-----END CERTIFICATE-----", "MIIBszCCAVmgAwIBAgIUQ9wErTyUiOpAsDfGhJkLzXcVbNm"},
	{"token counts", `"usage":{"input":1200,"output":340,"totalTokens":1540}`, `"totalTokens":1540`},
	{"max tokens", "max_tokens=8000 maxTokens: 1000 tokenCount=42", "max_tokens=8000 maxTokens: 1000 tokenCount=42"},
	{"token type", `"token_type": "Bearer", "expires_in": 3600`, `"token_type": "Bearer"`},
	{"mkdir -p", "mkdir -p src/app/internal && cd src/app", "mkdir -p src/app/internal"},
	{"docker run -p -u", "docker run -p 8080:80 -u 1000:1000 -e MODE=dev nginx", "-p 8080:80 -u 1000:1000"},
	{"ssh -p", "ssh -p 2222 deploy@host uptime", "ssh -p 2222 deploy@host"},
	{"git commit -p", "git add -p && git commit -p -m wip", "git commit -p -m wip"},
	{"env reference", "password=$DB_PASSWORD token=${API_TOKEN} secret: ${{ secrets.GITHUB_TOKEN }}", "password=$DB_PASSWORD token=${API_TOKEN} secret: ${{ secrets.GITHUB_TOKEN }}"},
	{"secret name", "secretName: my-app-secret\npassword_file: /run/secrets/db", "secretName: my-app-secret\npassword_file: /run/secrets/db"},
	{"token file flag", "cli --token-file ~/.config/cli/token --max-tokens 500", "--token-file ~/.config/cli/token --max-tokens 500"},
	{"password stdin", "echo $PW | docker login --password-stdin -u bot registry.example.com", "--password-stdin -u bot registry.example.com"},
	{"ssh remote", "git@github.com:acme/api.git", "git@github.com:acme/api.git"},
	{"plain urls", "see https://github.com/acme/api/pull/42 and http://localhost:8080/?page=2&sort=asc", "https://github.com/acme/api/pull/42 and http://localhost:8080/?page=2&sort=asc"},
	{"timestamps and ips", "2026-11-30T09:18:59.639Z connect 10.0.0.12:5432 from [::1]:51234", "2026-11-30T09:18:59.639Z connect 10.0.0.12:5432"},
	{"paths", "edit src/tokenizer/token.go and internal/auth/password_policy.go", "src/tokenizer/token.go and internal/auth/password_policy.go"},
	{"prose about passwords", "Password: The password must be at least 12 characters long.", "The password must be at least 12 characters long."},
	{"offload key", `{"key": "build-log", "source": "bash"}`, `"key": "build-log"`},
	{"prose about headers", "the Authorization header is missing, so the API returns 401", "the Authorization header is missing"},
	{"base64 jwt header only", "header " + b64(`{"typ":"JWT","alg":"none"}`), b64(`{"typ":"JWT","alg":"none"}`)},
	{"aws arn", "arn:aws:iam::123456789012:role/deploy assumed", "arn:aws:iam::123456789012:role/deploy"},
	{"passwordless", "passwordless login enabled; tokenizer ready", "passwordless login enabled; tokenizer ready"},
	{"data uri", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"},
	{"token limits", "context limit reached: 128000 tokens; bearer of bad news", "context limit reached: 128000 tokens; bearer of bad news"},
	{"curl -u user only", "curl -u admin https://api.example.com/health", "curl -u admin https://api.example.com/health"},
	{"prefix in prose", "AWS keys start with AKIA and GitHub tokens with ghp_", "AWS keys start with AKIA and GitHub tokens with ghp_"},
	{"hex color and css", "color: #ff00aa; --token-color: var(--accent)", "color: #ff00aa; --token-color: var(--accent)"},
	{"test counts", `{"pass": 12, "fail": 0, "skip": 1}`, `"pass": 12`},
}

// leaked reports whether out holds the secret or an 8-character piece of it.
func leaked(out, secret string) bool {
	if strings.Contains(out, secret) {
		return true
	}
	const w = 8
	for i := 0; i+w <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+w]) {
			return true
		}
	}
	return false
}

// runSession is a session file of one run whose parts are chosen by the
// test: the user's message, a bash call's command and its output.
func runSession(t testing.TB, user, command, output string) *session.File {
	t.Helper()
	f, err := session.Parse(strings.NewReader(sessionText(user, command, output)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Diagnostics) > 0 {
		t.Fatalf("test session: %v", f.Diagnostics)
	}
	return f
}

// sessionText is runSession's file.
func sessionText(user, command, output string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	lines := []string{
		`{"type":"session","version":3,"id":"01a22bc0-0000-7000-8000-000000000001","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":` + q(user) + `}],"timestamp":1}}`,
		`{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":` + q(command) + `}}],"stopReason":"toolUse","timestamp":2}}`,
		`{"type":"message","id":"a0000003","parentId":"a0000002","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":` + q(output) + `}],"isError":false,"timestamp":3}}`,
		`{"type":"message","id":"a0000004","parentId":"a0000003","timestamp":"2026-12-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop","timestamp":4}}`,
	}
	return strings.Join(lines, "\n") + "\n"
}

// prompt is what the recap model would receive for f's whole branch.
func prompt(t testing.TB, f *session.File) string {
	t.Helper()
	p, err := Prepare(f, Run{})
	if err != nil {
		t.Fatal(err)
	}
	return p.SystemPrompt + "\n" + p.UserMessage
}

// TestRedactionSuite runs every secret through Redact and, placed as a
// tool's output, as a command line and as the user's message, through the
// whole request the recap model would receive; and every look-alike the
// same way. It reports how many secrets reach the prompt (goal: none) and
// how many look-alikes are removed, and fails on any.
func TestRedactionSuite(t *testing.T) {
	secrets := append(append([]secretCase{}, secretCases...), attackSecrets()...)
	looks := append(append([]lookAlike{}, lookAlikes...), attackLookAlikes...)
	if len(secrets) < 60 {
		t.Fatalf("the suite has %d secret shapes, want at least 60", len(secrets))
	}
	leaks, checks := 0, 0
	for _, c := range secrets {
		if !strings.Contains(c.text, c.secret) && !strings.Contains(strings.ReplaceAll(c.text, "\n", ""), c.secret) {
			t.Fatalf("%s: the text does not hold the secret %q", c.name, c.secret)
		}
		placements := []struct {
			where string
			out   string
		}{
			{"Redact", first(Redact(c.text))},
			{"tool output", prompt(t, runSession(t, "go", "cat config", c.text))},
			{"command", prompt(t, runSession(t, "go", c.text, "ok"))},
			{"user message", prompt(t, runSession(t, c.text, "true", "ok"))},
		}
		for _, p := range placements {
			checks++
			if leaked(p.out, c.secret) {
				leaks++
				t.Errorf("%s (%s): the secret %q reaches the prompt:\n%s", c.name, p.where, c.secret, excerpt(p.out, c.secret))
			}
		}
	}
	removed, kept := 0, 0
	for _, l := range looks {
		for _, p := range []struct {
			where string
			out   string
		}{
			{"Redact", first(Redact(l.text))},
			{"tool output", prompt(t, runSession(t, "go", "true", l.text))},
			{"user message", prompt(t, runSession(t, l.text, "true", "ok"))},
		} {
			if strings.Contains(p.out, l.keep) {
				kept++
				continue
			}
			removed++
			t.Errorf("look-alike %s (%s): %q was redacted:\n%s", l.name, p.where, l.keep, first(Redact(l.text)))
		}
	}
	t.Logf("redaction suite: %d secret shapes in %d placements: %d reach the prompt; %d look-alikes in %d placements: %d removed",
		len(secrets), checks, leaks, len(looks), kept+removed, removed)
}

func first(s string, _ int) string { return s }

// excerpt is the part of out around where secret (or a piece of it) is.
func excerpt(out, secret string) string {
	i := strings.Index(out, secret)
	for k := 0; i < 0 && k+8 <= len(secret); k++ {
		i = strings.Index(out, secret[k:k+8])
	}
	if i < 0 {
		return out
	}
	return fmt.Sprintf("…%s…", out[max(0, i-200):min(len(out), i+200)])
}
