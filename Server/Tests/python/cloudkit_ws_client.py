"""A small CloudKit Web Services client, written from Apple's "CloudKit Web
Services Reference" alone (no Canopy knowledge): the URL scheme, ckAPIToken
and ckWebAuthToken query parameters, the 421 AUTHENTICATION_REQUIRED answer
and its redirectURL, the operations' request and response dictionaries.
Only the Python standard library; every request goes to the base URL given
(a test's loopback server).
"""
import json
import re
import urllib.error
import urllib.parse
import urllib.request


class CloudKitError(Exception):
    """A request-level error dictionary: {uuid, serverErrorCode, reason, redirectURL?}."""

    def __init__(self, status, body):
        self.status = status
        self.body = body
        self.code = body.get("serverErrorCode")
        self.redirect_url = body.get("redirectURL")
        super().__init__(f"{status} {self.code}: {body.get('reason')}")


# The shapes CloudKit client libraries check before sending anything: an API
# token is 64 hexadecimal characters; a web auth token is a long string of
# the base64 alphabet.
API_TOKEN_SHAPE = re.compile(r"[0-9A-Fa-f]{64}")
WEB_AUTH_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9+/=_]{100,}")


class CredentialShapeError(ValueError):
    """A credential not shaped as CloudKit's: refused before any request."""


class CloudKit:
    def __init__(self, base, container, environment, api_token, web_auth_token=None):
        self.base = base.rstrip("/")
        self.container = container
        self.environment = environment
        if not API_TOKEN_SHAPE.fullmatch(api_token or ""):
            raise CredentialShapeError("ckAPIToken must be 64 hexadecimal characters")
        self.api_token = api_token
        self.web_auth_token = None
        if web_auth_token is not None:
            self.set_web_auth_token(web_auth_token)

    def set_web_auth_token(self, token):
        if not WEB_AUTH_TOKEN_SHAPE.fullmatch(token or ""):
            raise CredentialShapeError("ckWebAuthToken must be 100 or more characters of the base64 alphabet")
        self.web_auth_token = token

    def url(self, subpath):
        # [path]/database/[version]/[container]/[environment]/[operation-specific subpath]
        query = {"ckAPIToken": self.api_token}
        if self.web_auth_token:
            query["ckWebAuthToken"] = self.web_auth_token
        # The reference: '+' as %2B, '/' as %2F, '=' as %3D.
        encoded = urllib.parse.urlencode(query, safe="", quote_via=urllib.parse.quote)
        return f"{self.base}/database/1/{self.container}/{self.environment}/{subpath}?{encoded}"

    def request(self, subpath, body=None, method=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url(subpath), data=data, method=method or ("GET" if body is None else "POST"),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                # The web token rotates (docs/WEB_SERVICES.md): each answer
                # carries the one to send next, as CloudKit's do.
                fresh = response.headers.get("X-Apple-CloudKit-Web-Auth-Token")
                if fresh and self.web_auth_token:
                    self.web_auth_token = fresh
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            raise CloudKitError(error.code, json.loads(error.read() or b"{}")) from None

    # Users
    def current_user(self, database="public"):
        return self.request(f"{database}/users/current")

    # Zones
    def create_zone(self, name):
        return self.request("private/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": name}}}]})["zones"][0]

    def list_zones(self, database):
        return self.request(f"{database}/zones/list")["zones"]

    # Records
    def modify(self, database, zone_id, operations, atomic=True):
        return self.request(f"{database}/records/modify", {"zoneID": zone_id, "operations": operations, "atomic": atomic})["records"]

    def query(self, database, zone_id, record_type, filter_by=(), sort_by=(), results_limit=None, marker=None):
        body = {"zoneID": zone_id, "query": {"recordType": record_type, "filterBy": list(filter_by), "sortBy": list(sort_by)}}
        if results_limit:
            body["resultsLimit"] = results_limit
        if marker:
            body["continuationMarker"] = marker
        return self.request(f"{database}/records/query", body)

    def lookup(self, database, zone_id, names):
        return self.request(f"{database}/records/lookup", {"zoneID": zone_id, "records": [{"recordName": n} for n in names]})["records"]

    def zone_changes(self, database, zone_id, sync_token=None):
        zone = {"zoneID": zone_id}
        if sync_token:
            zone["syncToken"] = sync_token
        return self.request(f"{database}/changes/zone", {"zones": [zone]})["zones"][0]

    # Assets: request upload URLs, post the bytes, save the receipt in a record.
    def upload_asset(self, database, zone_id, record_type, field_name, data, record_name=None):
        token = {"recordType": record_type, "fieldName": field_name}
        if record_name:
            token["recordName"] = record_name
        answer = self.request(f"{database}/assets/upload", {"zoneID": zone_id, "tokens": [token]})["tokens"][0]
        request = urllib.request.Request(answer["url"], data=data, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            single_file = json.loads(response.read())["singleFile"]
        return answer["recordName"], single_file

    # Sharing
    def accept(self, short_guid):
        return self.request("public/records/accept", {"shortGUIDs": [{"value": short_guid}]})["results"][0]
