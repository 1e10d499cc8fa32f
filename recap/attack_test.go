package recap

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The second redaction set, written to attack the first: provider formats
// from gitleaks' rule list that the first set lacks, and secrets in the
// places they turn up in agent sessions (environment dumps, curl headers,
// docker, kubectl, psql, mysql and git command lines, credential files
// printed by cat, nested JSON, YAML, query strings), wrapped, split,
// base64-, hex- and percent-encoded; and look-alikes from the same places
// that must stay readable. Every secret is fake, made here from a hash.

// fake is n characters of alphabet, the same for the same tag on every run.
func fake(tag, alphabet string, n int) string {
	var b strings.Builder
	seed := sha256.Sum256([]byte(tag))
	for i := 0; b.Len() < n; i++ {
		if i == len(seed) {
			seed = sha256.Sum256(seed[:])
			i = 0
		}
		b.WriteByte(alphabet[int(seed[i])%len(alphabet)])
	}
	return b.String()
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lowNum  = "abcdefghijklmnopqrstuvwxyz0123456789"
	upNum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexLow  = "0123456789abcdef"
	urlSafe = alnum + "-_"
	b64Std  = alnum + "+/"
)

// A few secrets used in several shapes.
var (
	atkGitHub  = "ghp_" + fake("gh", alnum, 36)
	atkAWSID   = "AKIA" + fake("awsid", upNum, 16)
	atkAWSKey  = fake("awskey", b64Std, 40)
	atkSession = "IQoJb3JpZ2luX2VjE" + fake("awssess", b64Std, 180)
	atkPass    = "Pw-" + fake("pass", alnum, 14)
	atkOpenAI  = "sk-proj-" + fake("openai", urlSafe, 60)
	atkJWT     = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9." + "eyJ" + fake("jwtbody", urlSafe, 120) + "." + fake("jwtsig", urlSafe, 86)
	atkSlack   = "xoxb-" + fake("slack1", "0123456789", 12) + "-" + fake("slack2", "0123456789", 13) + "-" + fake("slack3", alnum, 24)
	atkPEM     = "-----BEGIN PRIVATE KEY-----\n" + fake("pem1", b64Std, 64) + "\n" + fake("pem2", b64Std, 64) + "\n-----END PRIVATE KEY-----\n"
)

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }
func b64url(s string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// pct percent-encodes every byte but letters and digits.
func pct(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func attackSecrets() []secretCase {
	gitleaks := []struct{ name, token string }{
		{"alibaba", "LTAI" + fake("ali", lowNum, 20)},
		{"artifactory api key", "AKCp" + fake("artif", alnum, 69)},
		{"artifactory reference token", "cmVmdGtu" + fake("artref", alnum, 56)},
		{"clojars", "CLOJARS_" + fake("clj", lowNum, 60)},
		{"contentful", "CFPAT-" + fake("cful", urlSafe, 43)},
		{"defined networking", "dnkey-" + fake("dn1", upNum, 26) + "-" + fake("dn2", upNum, 52)},
		{"duffel", "duffel_test_" + fake("duffel", urlSafe, 43)},
		{"dynatrace", "dt0c01." + fake("dt1", upNum, 24) + "." + fake("dt2", upNum, 64)},
		{"easypost", "EZAK" + fake("ezak", lowNum, 54)},
		{"flutterwave", "FLWSECK_TEST-" + fake("flw", hexLow, 32) + "-X"},
		{"frame.io", "fio-u-" + fake("fio", urlSafe, 64)},
		{"harness", "pat." + fake("h1", alnum, 22) + "." + fake("h2", alnum, 24) + "." + fake("h3", alnum, 20)},
		{"infracost", "ico-" + fake("ico", alnum, 32)},
		{"intra42", "s-s4t2ud-" + fake("i42", hexLow, 64)},
		{"new relic", "NRAK-" + fake("nrak", upNum, 27)},
		{"octopus deploy", "API-" + fake("octo", upNum, 26)},
		{"openshift", "sha256~" + fake("ocp", urlSafe, 43)},
		{"plaid", "access-sandbox-" + fake("pl1", hexLow, 8) + "-" + fake("pl2", hexLow, 4) + "-" + fake("pl3", hexLow, 4) + "-" + fake("pl4", hexLow, 4) + "-" + fake("pl5", hexLow, 12)},
		{"planetscale token", "pscale_tkn_" + fake("ps1", urlSafe, 43)},
		{"planetscale password", "pscale_pw_" + fake("ps2", urlSafe, 43)},
		{"prefect", "pnu_" + fake("prefect", alnum, 36)},
		{"readme", "rdme_" + fake("rdme", lowNum, 70)},
		{"rubygems", "rubygems_" + fake("gem", hexLow, 48)},
		{"scalingo", "tk-us-" + fake("scal", urlSafe, 48)},
		{"brevo", "xkeysib-" + fake("sib1", hexLow, 64) + "-" + fake("sib2", alnum, 16)},
		{"settlemint", "sm_pat_" + fake("sm", alnum, 16)},
		{"shippo", "shippo_live_" + fake("shippo", hexLow, 40)},
		{"sonarqube", "squ_" + fake("sonar", hexLow, 40)},
		{"sourcegraph", "sgp_" + fake("sg1", hexLow, 16) + "_" + fake("sg2", hexLow, 40)},
		{"typeform", "tfp_" + fake("tf", urlSafe, 59)},
		{"yandex", "AQVN" + fake("yandex", urlSafe, 36)},
		{"1password service account", "ops_eyJ" + fake("ops", b64Std, 260)},
		{"notion", "ntn_" + fake("ntn1", "0123456789", 11) + fake("ntn2", alnum, 35)},
		{"slack refresh", "xoxe-1-" + fake("xoxe", upNum, 146)},
		{"figma", "figd_" + fake("figma", urlSafe, 40)},
		{"mapbox secret", "sk.eyJ1IjoiZGVwbG95IiwiYSI6ImNs" + fake("mapbox1", alnum, 10) + "In0." + fake("mapbox2", urlSafe, 22)},
		{"gitlab ci job", "glcbt-" + fake("glcbt", urlSafe, 20)},
		{"deepseek", "sk-" + fake("deepseek", hexLow, 32)},
		{"anthropic admin", "sk-ant-admin01-" + fake("antadmin", urlSafe, 93) + "AA"},
		{"twitter bearer", "AAAAAAAAAAAAAAAAAAAAA" + fake("tw1", alnum, 20) + "%2B" + fake("tw2", alnum, 20) + "%3D" + fake("tw3", alnum, 40)},
		{"discord bot", "MTA" + fake("disc1", alnum, 23) + "." + fake("disc2", urlSafe, 6) + "." + fake("disc3", urlSafe, 38)},
		{"teams webhook", "https://acme.webhook.office.com/webhookb2/" + fake("teams1", hexLow, 8) + "-1a2b-4c3d-8e9f-" + fake("teams2", hexLow, 12) + "@" + fake("teams3", hexLow, 8) + "-aaaa-4bbb-8ccc-" + fake("teams4", hexLow, 12) + "/IncomingWebhook/" + fake("teams5", hexLow, 32) + "/" + fake("teams6", hexLow, 8) + "-dddd-4eee-8fff-" + fake("teams7", hexLow, 12)},
		{"discord webhook", "https://discord.com/api/webhooks/" + fake("dw1", "0123456789", 18) + "/" + fake("dw2", urlSafe, 68)},
	}
	var cases []secretCase
	for _, g := range gitleaks {
		secret := g.token
		if strings.HasPrefix(secret, "https://") {
			secret = secret[len(secret)-30:]
		}
		cases = append(cases, secretCase{"format " + g.name, "the service answered with " + g.token + " for the deploy", secret})
	}
	pgPass := "pg-" + fake("pgpass", alnum, 12)
	myPass := "My" + fake("mypass", alnum, 10) + "!"
	kubeTok := fake("kubetok", lowNum, 6) + "." + fake("kubetok2", lowNum, 16)
	npmAuth := b64("deploy:" + atkPass)
	cases = append(cases, []secretCase{
		// Environment dumps.
		{"env secret key base", "HOME=/home/dev\nSECRET_KEY_BASE=" + fake("skb", hexLow, 128) + "\nLANG=C.UTF-8", fake("skb", hexLow, 128)},
		{"env laravel app key", "APP_ENV=local\nAPP_KEY=base64:" + fake("appkey", b64Std, 43) + "=", fake("appkey", b64Std, 43)},
		{"env numbered password", "DB_PASSWORD2=" + atkPass + "\nDB_HOST=db", atkPass},
		{"env run-together name", "MYSQLROOTPASSWORD=" + myPass, myPass},
		{"env lowercase compound", "adminpassword=" + atkPass + " dbuser=app", atkPass},
		{"env declare -x", `declare -x OPENAI_API_KEY="` + atkOpenAI + `"`, atkOpenAI[8:40]},
		{"env aws session token", "AWS_SESSION_TOKEN=" + atkSession, atkSession[20:60]},
		{"env nextauth", "NEXTAUTH_SECRET=" + fake("nextauth", b64Std, 44), fake("nextauth", b64Std, 44)},
		{"env heroku uuid key", "HEROKU_API_KEY=3f1e7c2a-9b4d-4e8f-a1c6-" + fake("heroku", hexLow, 12), fake("heroku", hexLow, 12)},
		{"docker inspect env", `"Env": [` + "\n" + `  "POSTGRES_PASSWORD=` + pgPass + `",` + "\n" + `  "PATH=/usr/local/bin"` + "\n]", pgPass},
		{"env in one line", "env: A=1 B=2 SLACK_SIGNING_SECRET=" + fake("slacksign", hexLow, 32) + " C=3", fake("slacksign", hexLow, 32)},
		// curl.
		{"curl gitlab private-token", `curl -H "PRIVATE-TOKEN: ` + fake("glpriv", alnum, 20) + `" https://gitlab.example.com/api/v4/projects`, fake("glpriv", alnum, 20)},
		{"curl x-auth-token", `curl --header 'X-Auth-Token: ` + fake("xauth", alnum, 32) + `' https://api.example.com`, fake("xauth", alnum, 32)},
		{"curl no space after colon", `curl -H "Authorization:Bearer ` + fake("nospace", alnum, 30) + `" https://x`, fake("nospace", alnum, 30)},
		{"curl digest", `curl -H 'Authorization: Digest username="ops", realm="api", nonce="abc", response="` + fake("digest", hexLow, 32) + `"' https://x`, fake("digest", hexLow, 32)},
		{"curl cookie flag", `curl -b 'sessionid=` + fake("cookieb", lowNum, 32) + `' https://app.example.com/admin`, fake("cookieb", lowNum, 32)},
		{"curl form data", `curl -d "grant_type=client_credentials&client_id=ci&client_secret=` + fake("clisec", alnum, 32) + `" https://auth.example.com/token`, fake("clisec", alnum, 32)},
		{"curl json body", `curl -X POST -d '{"username":"ops","password":"` + atkPass + `"}' https://api.example.com/login`, atkPass},
		{"curl ocp-apim", `curl -H "Ocp-Apim-Subscription-Key: ` + fake("ocp", hexLow, 32) + `" https://x.azure-api.net`, fake("ocp", hexLow, 32)},
		{"httpie auth", "http -a admin:" + atkPass + " https://api.example.com/health", atkPass},
		// docker, kubectl, psql, mysql, git, cloud CLIs.
		{"docker password-stdin", "echo '" + atkPass + "' | docker login -u ci --password-stdin ghcr.io", atkPass},
		{"sudo -S", "echo " + atkPass + " | sudo -S systemctl restart app", atkPass},
		{"chpasswd", `echo "deploy:` + atkPass + `" | sudo chpasswd`, atkPass},
		{"docker build-arg", "docker build --build-arg NPM_TOKEN=" + fake("npmtok", alnum, 36) + " -t app .", fake("npmtok", alnum, 36)},
		{"kubectl from-literal", "kubectl create secret generic db --from-literal=username=app --from-literal=password=" + pgPass, pgPass},
		{"kubectl docker-password", "kubectl create secret docker-registry regcred --docker-server=ghcr.io --docker-username=ci --docker-password=" + atkPass, atkPass},
		{"kubectl set-credentials", "kubectl config set-credentials ci --token=" + kubeTok, kubeTok},
		{"psql keyword string", `psql "host=db.internal port=5432 user=app password=` + pgPass + ` dbname=app sslmode=require"`, pgPass},
		{"mysql quoted with space", `mysql -u root -p"` + "Two Words " + myPass + `" app`, myPass},
		{"mysql quoted attached", "mysql -uroot -p'" + myPass + "' -e 'show databases'", myPass},
		{"git config password", "git config --global user.password " + atkPass, atkPass},
		{"git extraheader", `git -c http.extraHeader="AUTHORIZATION: basic ` + b64("x-access-token:"+atkGitHub) + `" clone https://github.com/acme/api`, b64("x-access-token:" + atkGitHub)[8:48]},
		{"git insteadOf", `git config --global url."https://oauth2:` + fake("oauth2", alnum, 20) + `@gitlab.com/".insteadOf "https://gitlab.com/"`, fake("oauth2", alnum, 20)},
		{"aws configure set", "aws configure set aws_secret_access_key " + atkAWSKey, atkAWSKey},
		{"gh secret set", `gh secret set DEPLOY_KEY --body "` + atkPass + `"`, atkPass},
		{"npm config set", "npm config set //registry.npmjs.org/:_authToken " + fake("npmcfg", alnum, 36), fake("npmcfg", alnum, 36)},
		{"az login", "az login --service-principal -u 7c1e3c2a-app -p " + fake("azsp", alnum, 8) + "~" + fake("azsp2", alnum, 30) + " --tenant t", fake("azsp2", alnum, 30)},
		{"lftp user,pass", "lftp -u deploy," + atkPass + " sftp://files.example.com", atkPass},
		{"psexec", `psexec \\host -u admin -p ` + atkPass + ` cmd`, atkPass},
		{"cmdkey", "cmdkey /generic:server /user:admin /pass:" + atkPass, atkPass},
		{"ssh-keygen -N", "ssh-keygen -t ed25519 -N '" + myPass + "' -f deploy_key", myPass},
		{"python triple quotes", "API_TOKEN = \"\"\"\n    " + fake("triple", alnum, 30) + "\n\"\"\"", fake("triple", alnum, 30)},
		{"yaml doubled quote", "password: 'it''s-" + myPass + "'", myPass},
		{"aws ecr get-login-password", "$ aws ecr get-login-password --region eu-west-1\n" + b64(`{"payload":"`+fake("ecrp", b64Std, 60)+`","datakey":"`+fake("ecrk", b64Std, 60)+`","version":"2","type":"DATA_KEY","expiration":1767225600}`), b64(`{"payload":"` + fake("ecrp", b64Std, 60) + `","datakey":"` + fake("ecrk", b64Std, 60))[60:100]},
		{"box table row", "┌──────────┬──────────────────────────────────┐\n│ Key      │ Value                            │\n│ API_KEY  │ " + fake("boxrow", alnum, 32) + " │\n└──────────┴──────────────────────────────────┘", fake("boxrow", alnum, 32)},
		{"markdown table row", "| name | value |\n|---|---|\n| STRIPE_SECRET_KEY | " + fake("mdrow", alnum, 30) + " |", fake("mdrow", alnum, 30)},
		{"powershell securestring", `$pw = ConvertTo-SecureString "` + atkPass + `" -AsPlainText -Force`, atkPass},
		// Credential files printed by cat.
		{"cat .npmrc _auth", "$ cat ~/.npmrc\nregistry=https://registry.npmjs.org/\n_auth = " + npmAuth + "\nalways-auth=true", npmAuth},
		{"cat .npmrc github", "$ cat .npmrc\n@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken=" + atkGitHub, atkGitHub},
		{"cat .pypirc", "[distutils]\nindex-servers = pypi private\n\n[private]\nrepository = https://pypi.example.com\nusername = ci\npassword: " + atkPass + "\n", atkPass},
		{"cat .netrc multi-line", "machine github.com\n  login octocat\n  password " + atkGitHub[4:] + "\nmachine api.example.com login x password " + myPass, atkGitHub[4:20]},
		{"cat aws credentials", "[default]\naws_access_key_id = " + atkAWSID + "\naws_secret_access_key = " + atkAWSKey + "\naws_session_token = " + atkSession + "\n", atkAWSKey},
		{"cat kubeconfig", "users:\n- name: admin\n  user:\n    token: " + kubeTok + "\n    auth-provider:\n      config:\n        refresh-token: 1//0g" + fake("gref", urlSafe, 60) + "\n", kubeTok},
		{"kubeconfig refresh token", "      config:\n        refresh-token: 1//0g" + fake("gref", urlSafe, 60) + "\n        client-id: abc", fake("gref", urlSafe, 60)},
		{"cat docker config identitytoken", `{"auths":{"acme.azurecr.io":{"identitytoken":"` + fake("idtok", alnum, 40) + `"}}}`, fake("idtok", alnum, 40)},
		{"cat gcp service account", `{"type": "service_account", "private_key_id": "` + fake("pkid", hexLow, 40) + `", "private_key": "` + strings.ReplaceAll(atkPEM, "\n", `\n`) + `", "client_email": "ci@p.iam.gserviceaccount.com"}`, fake("pem1", b64Std, 64)},
		{"aws csv credentials", "User name,Password,Access key ID,Secret access key,Console login link\ndeploy,," + atkAWSID + "," + atkAWSKey + ",https://123456789012.signin.aws.amazon.com/console", atkAWSKey},
		{"vault kv get", "====== Data ======\nKey         Value\n---         -----\napi_key     " + fake("vaultkv", alnum, 24) + "\nusername    svc", fake("vaultkv", alnum, 24)},
		// Nested JSON and YAML.
		{"k8s env name/value json", `{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DB_PASSWORD","value":"` + pgPass + `"}]}]}}}}`, pgPass},
		{"k8s env name/value yaml", "        env:\n        - name: STRIPE_SECRET\n          value: " + fake("stripeval", alnum, 28) + "\n        - name: MODE\n          value: prod", fake("stripeval", alnum, 28)},
		{"ssm parameter", `{"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "` + pgPass + `", "Version": 3}}`, pgPass},
		{"json secrets map", `{"secrets": {"db": "` + pgPass + `", "stripe": "` + fake("smap", alnum, 24) + `"}}`, pgPass},
		{"json deep", `{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"clientSecret":"` + fake("deep", alnum, 30) + `"}}}}}}}}}`, fake("deep", alnum, 30)},
		{"json string holding json", `{"body": "{\"password\": \"` + atkPass + `\", \"user\": \"ops\"}"}`, atkPass},
		{"json escaped newline before token", `{"notes": "rotate it\n` + atkGitHub + `"}`, atkGitHub},
		{"yaml block scalar", "stringData:\n  token: |\n    " + fake("yamlblock", alnum, 40) + "\n  mode: x", fake("yamlblock", alnum, 40)},
		{"yaml folded", "auth:\n  password: >-\n    " + atkPass + "\n", atkPass},
		{"yaml anchor", "defaults: &defaults\n  password: &pw " + atkPass + "\nprod:\n  password: *pw", atkPass},
		{"yaml single quoted", "credentials:\n  secret_access_key: '" + atkAWSKey + "'", atkAWSKey},
		{"helm --set", "helm upgrade app ./chart --set auth.rootPassword=" + pgPass + ",auth.database=app", pgPass},
		// URLs with query tokens.
		{"query api_key", "GET https://api.example.com/v1/data?api_key=" + fake("qapikey", alnum, 32) + "&page=2", fake("qapikey", alnum, 32)},
		{"query private_token", "https://gitlab.example.com/api/v4/projects?private_token=" + fake("qpriv", alnum, 20), fake("qpriv", alnum, 20)},
		{"fragment access_token", "redirected to https://app.example.com/cb#access_token=" + fake("frag", alnum, 40) + "&token_type=Bearer", fake("frag", alnum, 40)},
		{"telegram bot url", "POST https://api.telegram.org/bot7348291056:AA" + fake("tgurl", urlSafe, 33) + "/sendMessage", fake("tgurl", urlSafe, 33)},
		{"jdbc password", "jdbc:postgresql://db:5432/app?user=app&password=" + pgPass + "&ssl=true", pgPass},
		// Wrapped, split, concatenated.
		{"shell adjacent quotes", `export TOKEN="` + atkGitHub[:20] + `""` + atkGitHub[20:] + `"`, atkGitHub[20:]},
		{"wrapped at 64 in a box", "│ " + atkOpenAI[:40] + " │\n│ " + atkOpenAI[40:] + " │", atkOpenAI[40:]},
		{"go concat", "token := \"" + atkSlack[:18] + "\" +\n\t\"" + atkSlack[18:] + "\"", atkSlack[18:]},
		{"pem with escaped newlines", `"key": "` + strings.ReplaceAll(atkPEM, "\n", `\n`) + `"`, fake("pem2", b64Std, 64)},
		// Encoded.
		{"base64 of a token alone", "GH=" + b64(atkGitHub), b64(atkGitHub)[8:40]},
		{"base64url of .env", "payload=" + b64url("DB_HOST=db\nDB_PASSWORD="+pgPass+"\n"), b64url("DB_HOST=db\nDB_PASSWORD=" + pgPass + "\n")[16:40]},
		{"double base64", "blob " + b64(b64("password="+atkPass)), b64(b64("password=" + atkPass))[8:40]},
		{"base64 dockerconfigjson", "  .dockerconfigjson: " + b64(`{"auths":{"ghcr.io":{"auth":"`+b64("ci:"+atkGitHub)+`"}}}`), b64(`{"auths":{"ghcr.io":{"auth":"` + b64("ci:"+atkGitHub) + `"}}}`)[40:80]},
		{"base64 tls.key", "  tls.key: " + b64(atkPEM), b64(atkPEM)[40:80]},
		{"base64 jwt (gitleaks jwt-base64)", "id: " + b64(atkJWT), b64(atkJWT)[40:80]},
		{"hex of assignment", "$ xxd -p .env\n" + hexOf("API_TOKEN="+fake("hextok", alnum, 24)), hexOf("API_TOKEN=" + fake("hextok", alnum, 24))[20:60]},
		{"hex of token", "key (hex): " + hexOf(atkAWSID+" "+atkAWSKey), hexOf(atkAWSID + " " + atkAWSKey)[40:80]},
		{"percent-encoded url creds", "next=https%3A%2F%2Fdeploy%3A" + pct(myPass) + "%40ci.example.com%2Fhook", pct(myPass)},
		{"percent-encoded token", "state=" + url.QueryEscape("token="+atkGitHub), atkGitHub},
		{"percent-encoded json", "q=" + pct(`{"password":"`+atkPass+`"}`), pct(atkPass)},
		{"backslash-x escapes", `printf '` + xEscapes("password="+atkPass) + `'`, xEscapes(atkPass)[:24]},
	}...)
	return cases
}

// xEscapes writes s as \xNN escapes, as printf and many languages read them.
func xEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\x%02x`, s[i])
	}
	return b.String()
}

var attackLookAlikes = []lookAlike{
	{"env pwd", "PWD=/work/app\nOLDPWD=/home/dev/src\nSHLVL=1", "PWD=/work/app\nOLDPWD=/home/dev/src"},
	{"env credential paths", "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/.config/gcloud/sa.json\nSSH_AUTH_SOCK=/tmp/ssh-XXXXq1w2/agent.1234", "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/.config/gcloud/sa.json\nSSH_AUTH_SOCK=/tmp/ssh-XXXXq1w2/agent.1234"},
	{"token path", "token: ~/.config/gh/token\ncredentials: ./secrets/creds.json", "token: ~/.config/gh/token\ncredentials: ./secrets/creds.json"},
	{"kebab sk- identifier", "pip install sk-learn-compatible-estimator-wrapper", "sk-learn-compatible-estimator-wrapper"},
	{"docker build secret mount", "docker build --secret id=npmrc,src=$HOME/.npmrc -t app .", "--secret id=npmrc,src=$HOME/.npmrc"},
	{"gpg passphrase fd", "gpg --batch --passphrase-fd 0 --decrypt notes.gpg", "--passphrase-fd 0"},
	{"gh secret list", "API_TOKEN\tUpdated 2026-11-30\nDEPLOY_KEY\tUpdated 2026-11-02", "API_TOKEN\tUpdated 2026-11-30"},
	{"kubectl get secrets", "NAME                  TYPE                                  DATA   AGE\ndb-password           Opaque                                1      5d\ndefault-token-x7k2p   kubernetes.io/service-account-token   3      30d", "db-password           Opaque"},
	{"hex of elf header", "7f454c4602010100000000000000000003003e0001000000", "7f454c4602010100000000000000000003003e0001000000"},
	{"hex of text", "48656c6c6f2c20776f726c6421205468697320697320612074657374", "48656c6c6f2c20776f726c6421205468697320697320612074657374"},
	{"percent-encoded plain url", "redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback%3Fstep%3D2", "redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback%3Fstep%3D2"},
	{"sha256 digest", "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
	{"bcrypt hash", "password_hash: $2b$12$KIXQJ3h1bQ0pV6n5Yq3eUOcR1lHk7Jm9w2zS8tX4uA6dE0fG1hI2K", "$2b$12$KIXQJ3h1bQ0pV6n5Yq3eUOcR1lHk7Jm9w2zS8tX4uA6dE0fG1hI2K"},
	{"token usage json", `{"usage":{"input_tokens":1200,"output_tokens":340,"cache_read_input_tokens":0},"tokens":1540}`, `"output_tokens":340,"cache_read_input_tokens":0},"tokens":1540`},
	{"tokens list", `{"tokens": ["internationalization", "tokenization", "pipeline"]}`, `"internationalization", "tokenization"`},
	{"key bindings", `{"key": "ctrl+o", "action": "expand"} keybindings: {"submit": "enter"}`, `"key": "ctrl+o"`},
	{"idempotency key", `"idempotencyKey": "550e8400-e29b-41d4-a716-446655440000"`, "550e8400-e29b-41d4-a716-446655440000"},
	{"commit in url", "https://github.com/acme/api/commit/3f5a9c2e8b1d4f6a7c9e0b2d4f6a8c0e2b4d6f8a?diff=split", "3f5a9c2e8b1d4f6a7c9e0b2d4f6a8c0e2b4d6f8a"},
	{"semver", "bumped @acme/sdk from 1.2.3-beta.4+build.5 to 2.0.0-rc.1", "1.2.3-beta.4+build.5 to 2.0.0-rc.1"},
	{"email and user@host", "author: Jane Doe <jane@example.com>; ssh deploy@10.0.0.4", "Jane Doe <jane@example.com>; ssh deploy@10.0.0.4"},
	{"url without password", "postgres://app@db.internal:5432/app and redis://cache:6379/0", "postgres://app@db.internal:5432/app and redis://cache:6379/0"},
	{"stdin password from file", "docker login -u ci --password-stdin < ~/.docker/pw.txt", "--password-stdin < ~/.docker/pw.txt"},
	{"echo into other pipes", "echo 'hello world' | tr a-z A-Z | sudo tee /etc/motd", "echo 'hello world' | tr a-z A-Z"},
	{"git config non-secret", "git config --global user.name 'Jane Doe' && git config --global core.editor vim", "user.name 'Jane Doe'"},
	{"helm set plain", "helm upgrade app ./chart --set image.tag=v1.4.2,replicaCount=3", "--set image.tag=v1.4.2,replicaCount=3"},
	{"k8s env plain", "        env:\n        - name: LOG_LEVEL\n          value: debug\n        - name: TOKEN_TTL\n          value: 3600s", "value: debug"},
	{"name value token ttl", `[{"name":"TOKEN_TTL","value":"3600s"},{"name":"SECRET_NAME","value":"db-creds"}]`, `"value":"db-creds"`},
	{"yaml anchors plain", "base: &base\n  image: nginx:1.27\nweb:\n  <<: *base", "image: nginx:1.27"},
	{"aws csv header only", "User name,Password,Access key ID,Secret access key\n", "User name,Password,Access key ID,Secret access key"},
	{"csv plain columns", "name,token_count,latency_ms\nsmall,1200,35\nlarge,98000,410", "small,1200,35\nlarge,98000,410"},
	{"vault kv metadata", "Key              Value\n---              -----\ncreated_time     2026-11-30T09:18:59Z\nversion          3", "created_time     2026-11-30T09:18:59Z"},
	{"telegram bot prose", "the bot 12345678 answered: AAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "the bot 12345678 answered"},
	{"pagination token word", "nextPageToken is empty; fetched 3 pages", "nextPageToken is empty; fetched 3 pages"},
	{"octopus-like words", "API-GATEWAY-DEPLOYMENT-STAGE logs", "API-GATEWAY-DEPLOYMENT-STAGE logs"},
	{"percent in prose", "CPU at 100%, memory 42%; 5%3 is 2", "CPU at 100%, memory 42%; 5%3 is 2"},
	{"base64 of binary", "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAGXRFWHRTb2Z0d2FyZQBBZG9iZSBJbWFnZVJlYWR5ccllPAAAAk1JREFUeNqkU01oE0EU", "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAGXRFWHRTb2Z0d2FyZQBBZG9iZSBJbWFnZVJlYWR5ccllPAAAAk1JREFUeNqkU01oE0EU"},
	{"go test output", "ok  \tgithub.com/acme/api/auth\t0.412s\nok  \tgithub.com/acme/api/token\t(cached)", "github.com/acme/api/auth\t0.412s"},
	{"uuid in header", "X-Request-Id: 01a22bc0-1a36-74a5-80f2-9894ba8d6c2a", "01a22bc0-1a36-74a5-80f2-9894ba8d6c2a"},
	{"git credential prompt", "Password for 'https://jane@github.com': ", "Password for 'https://jane@github.com'"},
	{"markdown table prose", "| option | meaning |\n|---|---|\n| token | the name of the API token to use |\n| password | required |", "| token | the name of the API token to use |\n| password | required |"},
	{"public stripe key", "Stripe publishable key pk_test_TYooMQauvdEDq54NiTphI7jx is for the browser", "the browser"},
	{"session id json", `{"sessionId":"01a22bc0-1a36-74a5-80f2-9894ba8d6c2a","cwd":"/work/app"}`, "01a22bc0-1a36-74a5-80f2-9894ba8d6c2a"},
}

var writeSessions = flag.String("write-sessions", "", "write the redaction suite's session files to this directory (for pi-session engine recap) and stop")

// TestWriteRedactionSessions writes, with -write-sessions DIR, one session
// file per secret of the second set and placement, one per look-alike, and
// manifest.json (file, kind, name, the text that must not or must appear)
// to check pi-session engine recap's output against.
func TestWriteRedactionSessions(t *testing.T) {
	if *writeSessions == "" {
		return
	}
	dir := *writeSessions
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	type item struct {
		File, Kind, Name, Text string
	}
	var manifest []item
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range attackSecrets() {
		for _, p := range []string{"output", "command", "user"} {
			user, cmd, out := "go", "cat config", c.text
			switch p {
			case "command":
				cmd, out = c.text, "ok"
			case "user":
				user, cmd, out = c.text, "true", "ok"
			}
			name := fmt.Sprintf("s%03d-%s.jsonl", i, p)
			write(name, sessionText(user, cmd, out))
			manifest = append(manifest, item{name, "secret", c.name, c.secret})
		}
	}
	for i, l := range attackLookAlikes {
		name := fmt.Sprintf("l%03d-output.jsonl", i)
		write(name, sessionText("go", "true", l.text))
		manifest = append(manifest, item{name, "keep", l.name, l.keep})
	}
	b, _ := json.Marshal(manifest)
	write("manifest.json", string(b))
}
