import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
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

    /// A whole HTML page, with headers that keep it out of frames and caches and run no script.
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
