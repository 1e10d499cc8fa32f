# A clone of this repository at a fixed commit, with branches and tags.
git clone -q "$ROOT" repo
cd repo
git checkout -q -B main d7ebc31
for b in network-retry network-timeouts network-dns-cache feature/ui-colors fix/relay-race docs/readme-figures; do
	git branch -q "$b" HEAD~3
done
git tag v0.9.0 HEAD~40
git tag -a v1.0.0-rc1 -m "first release candidate" HEAD~5
