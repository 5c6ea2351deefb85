import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusProtocol
import NimbusStore

extension SignInPage {
    /// A form page with a fresh CSRF token, set in its cookie too.
    static func formPage(
        _ kind: String, form: Form, links: SignInLinks, message: String?, secure: Bool,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let csrf = RandomToken.hex(bytes: 16)
        let redirect = form.redirect.map { "?redirect=" + FormText.percentEncoded($0) } ?? ""
        let field = { (name: String, type: String, value: String?) in
            "<label>\(name.capitalized) <input name=\"\(name)\" type=\"\(type)\" required"
                + (value.map { " value=\"\(FormText.html($0))\"" } ?? "") + "></label>"
        }
        let (title, fields, button, links_): (String, [String], String, String) =
            switch kind {
            case "/signup":
                ("Create an account", [field("email", "email", form.email), field("password", "password", nil)], "Sign up",
                 "<a href=\"\(links.signIn)\(redirect)\">I have an account</a>")
            case "/verify":
                ("Verify your address", [field("email", "email", form.email), field("code", "text", form.code)], "Verify",
                 "<a href=\"\(links.signIn)\(redirect)\">Sign in</a>")
            default:
                ("Sign in", [field("email", "email", form.email), field("password", "password", nil)], "Sign in",
                 "<a href=\"\(links.signIn)/signup\(redirect)\">Create an account</a>")
            }
        let action = links.signIn + kind + redirect
        var body = message.map { "<p class=\"note\">\(FormText.html($0))</p>" } ?? ""
        body += """
            <form method="post" action="\(FormText.html(action))">
            <input type="hidden" name="csrf" value="\(csrf)">
            <input type="hidden" name="redirect" value="\(FormText.html(form.redirect ?? ""))">
            \(fields.joined(separator: "\n"))
            <button type="submit">\(button)</button>
            </form>
            <p>\(links_)</p>
            """
        var response = page(status: status, title: title, body: body)
        response.setCookie(
            Cookie(name: csrfCookie, value: csrf, path: "/signin", secure: secure, httpOnly: true, sameSite: .strict))
        return response
    }

    /// The answer to a sign-in in CloudKit JS's sign-in window: a page whose script posts
    /// `{ckSession: token}` (what cloudkit.js reads from the message) to `window.opener` once
    /// per allowed origin, as the target origin, so the browser delivers it only if the opener
    /// is on one of them, then closes the window. Opened without an opener (a tab, not a
    /// pop-up), it goes to `fallback` instead: the first allowed origin with
    /// `?ckWebAuthToken=`, where a redirect without a target goes.
    static func popUpHandBack(token: String, origins allowed: [String], fallback: String) -> Response {
        let origins = allowed.compactMap(RedirectTarget.normalizedOrigin)
        let nonce = RandomToken.hex(bytes: 16)
        let script = """
            (function () {
              var message = {ckSession: \(scriptLiteral(.string(token)))};
              var origins = \(scriptLiteral(.array(origins.map(JSON.string))));
              if (window.opener && !window.opener.closed) {
                origins.forEach(function (origin) { window.opener.postMessage(message, origin); });
                window.close();
              } else {
                window.location.replace(\(scriptLiteral(.string(fallback))));
              }
            })();
            """
        let body = """
            <p>You are signed in; this window closes by itself.</p>
            <noscript><p><a href="\(FormText.html(fallback))">Return to the app</a></p></noscript>
            <script nonce="\(nonce)">\(script)</script>
            """
        var response = page(status: .ok, title: "Signed in", body: body)
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-\(nonce)'; frame-ancestors 'none'"
        return response
    }

    /// A JSON value as a JavaScript literal that cannot end the `<script>` element it is in.
    static func scriptLiteral(_ value: JSON) -> String {
        value.serialized().replacingOccurrences(of: "<", with: "\\u003c")
    }

    /// A whole HTML page, with headers that keep it out of frames and caches and run no script
    /// (``popUpHandBack(token:origins:fallback:)`` allows its one script by nonce).
    static func page(status: HTTPResponse.Status, title: String, body: String) -> Response {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(FormText.html(title))</title>
            <style>body{font:16px system-ui,sans-serif;max-width:24rem;margin:3rem auto;padding:0 1rem}
            label{display:block;margin:.8rem 0}input{display:block;width:100%;padding:.4rem;box-sizing:border-box}
            button{padding:.5rem 1rem}.note{background:#f3f3f3;padding:.6rem}</style>
            </head><body><h1>\(FormText.html(title))</h1>
            \(body)
            </body></html>
            """
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
        headers[frameOptions] = "DENY"
        headers[referrerPolicy] = "no-referrer"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }
}
