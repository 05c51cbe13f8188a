import CanopyAdmin
import CanopyRequestStore
import Testing

/// Database URLs as people write them: one server, or several for a
/// database under a failover manager (libpq's multi-host forms).
@Suite("Database URLs")
struct DatabaseEndpointTests {
    @Test("one server: TCP, a Unix socket, the user and password, sslmode")
    func oneServer() throws {
        let tcp = try DatabaseEndpoint(url: "postgres://admin:s%40cret@db.example.com:6432/app?sslmode=require")
        #expect(tcp.transport == .tcp(host: "db.example.com", port: 6432) && tcp.otherHosts.isEmpty)
        #expect(tcp.username == "admin" && tcp.password == "s@cret" && tcp.database == "app" && tcp.sslMode == "require")
        let socket = try DatabaseEndpoint(url: "postgresql://canopy@/canopy?host=/run/pg&port=5433")
        #expect(socket.transport == .unixSocket(directory: "/run/pg", port: 5433))
        #expect(try DatabaseEndpoint(url: "postgres://u@h/d").transport == .tcp(host: "h", port: 5432))
    }

    @Test("several servers, in the authority or in ?host= and ?port=, in order")
    func severalServers() throws {
        let authority = try DatabaseEndpoint(url: "postgres://postgres:pw@10.0.0.1:5432,10.0.0.2:5433,db3/canopy?target_session_attrs=read-write")
        #expect(authority.hosts == [.tcp(host: "10.0.0.1", port: 5432), .tcp(host: "10.0.0.2", port: 5433), .tcp(host: "db3", port: 5432)])
        #expect(authority.username == "postgres" && authority.password == "pw" && authority.database == "canopy")
        #expect(authority.host(1).hosts == [.tcp(host: "10.0.0.2", port: 5433)] && authority.host(1).username == "postgres")
        let query = try DatabaseEndpoint(url: "postgres://u@/d?host=a,b&port=1,2&target_session_attrs=primary")
        #expect(query.hosts == [.tcp(host: "a", port: 1), .tcp(host: "b", port: 2)])
        let onePort = try DatabaseEndpoint(url: "postgres://u@/d?host=a,b&port=7")
        #expect(onePort.hosts == [.tcp(host: "a", port: 7), .tcp(host: "b", port: 7)])
        // libpq tools get the same list.
        let environment = authority.libpqEnvironment
        #expect(environment["PGHOST"] == "10.0.0.1,10.0.0.2,db3" && environment["PGPORT"] == "5432,5433,5432")
        #expect(environment["PGTARGETSESSIONATTRS"] == "read-write")
        #expect(!authority.displayURL.contains("pw"))
    }

    @Test("bad URLs are refused with what is wrong, and never show the password")
    func refusals() {
        func message(_ url: String) -> String {
            do {
                _ = try DatabaseEndpoint(url: url)
                return "accepted"
            } catch let error as StoreError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(message("postgres://u:hunter2@a,b/d?target_session_attrs=read-only").contains("target_session_attrs must be read-write or primary"))
        #expect(!message("postgres://u:hunter2@a,b/d?target_session_attrs=standby").contains("hunter2"))
        #expect(message("postgres://u@/d?host=a,b,c&port=1,2").contains("names 3 hosts but 2 ports"))
        #expect(message("postgres://u@/d?host=a,,b").contains("an empty host"))
        #expect(message("postgres://u@/d?host=a&port=99999").contains("bad port"))
        #expect(message("mysql://u@h/d").contains("must look like"))
    }
}
