import Foundation
import NIOCore
import NIOPosix
import NimbusServer

/// nginx (Debian's `nginx-core`: `sendfile` and the WebDAV module) on a free loopback port, as
/// the asset bench's yardstick: a server doing the same job as Nimbus's asset routes on the
/// same machine, driven by the same client in the same rounds (issue 40, part 4). It serves
/// the files of its directory by `GET` and accepts new ones by WebDAV `PUT`; it neither hashes
/// nor fsyncs an upload, which Nimbus does.
final class NginxPeer: Sendable {
    /// Where nginx is looked for when `--nginx` names no path.
    static let defaultPaths = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"]

    let baseURL: String
    /// The directory nginx serves and `PUT`s into.
    let root: String
    private let process: ChildProcess

    private init(baseURL: String, root: String, process: ChildProcess) {
        self.baseURL = baseURL
        self.root = root
        self.process = process
    }

    /// The executable at `path`, or the first of ``defaultPaths`` that exists.
    static func executable(_ path: String?) throws -> String {
        if let path {
            guard FileManager.default.isExecutableFile(atPath: path) else { throw BenchError("--nginx: \(path) is not an executable") }
            return path
        }
        guard let found = defaultPaths.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchError("nginx not found (\(defaultPaths.joined(separator: ", "))): `apt-get install nginx-core`, or --nginx PATH")
        }
        return found
    }

    /// Starts nginx with a configuration of its own under `directory` (one worker, as the
    /// embedded server's work shares the same two cores; `sendfile` on; no access log) and
    /// waits until it answers.
    static func start(executable: String, directory: String) async throws -> NginxPeer {
        let root = (directory as NSString).appendingPathComponent("www")
        let temp = (directory as NSString).appendingPathComponent("temp")
        for made in [root, temp] { try FileManager.default.createDirectory(atPath: made, withIntermediateDirectories: true) }
        let port = try await freeLoopbackPort()
        let configuration = (directory as NSString).appendingPathComponent("nginx.conf")
        let user = getuid() == 0 ? "user root;\n" : ""
        try """
            \(user)worker_processes 1;
            daemon off;
            master_process off;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 256; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                client_max_body_size 0;
                client_body_temp_path \(temp)/body;
                proxy_temp_path \(temp)/proxy;
                fastcgi_temp_path \(temp)/fastcgi;
                uwsgi_temp_path \(temp)/uwsgi;
                scgi_temp_path \(temp)/scgi;
                default_type application/octet-stream;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root);
                    location / { dav_methods PUT; create_full_put_path on; }
                }
            }
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            executable: executable, arguments: ["-c", configuration, "-p", directory, "-e", "\(directory)/error.log"],
            output: .discard)
        let peer = NginxPeer(baseURL: "http://127.0.0.1:\(port)", root: root, process: process)
        let deadline = ContinuousClock.now + .seconds(10)
        while !(await accepts(port: port)) {
            guard ContinuousClock.now < deadline else {
                peer.stop()
                let log = (try? String(contentsOfFile: "\(directory)/error.log", encoding: .utf8)) ?? ""
                throw BenchError("nginx did not listen on 127.0.0.1:\(port) within 10 s: \(log.suffix(500))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return peer
    }

    /// A loopback port nothing listens on now (bound, read, released: nginx binds it next).
    private static func freeLoopbackPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port
        try await channel.close()
        guard let port else { throw BenchError("no port from a loopback bind") }
        return port
    }

    /// Whether a TCP connection to 127.0.0.1:`port` is accepted.
    private static func accepts(port: Int) async -> Bool {
        guard let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port).get()
        else { return false }
        try? await channel.close()
        return true
    }

    /// The URL of file `name` in ``root``.
    func url(_ name: String) -> String { "\(baseURL)/\(name)" }

    func stop() {
        process.send(SIGTERM)
        _ = process.waitUntilExit()
    }
}
