import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The page layout, the sign-in form, the error page.
enum LayoutTemplates {
    static let all: [String: String] = [
        "layout": layout, "signin": signIn, "error": error,
    ]

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · Nimbus</title>
        <link rel="stylesheet" href="/dashboard/assets/style.css">
        <script src="/dashboard/assets/app.js" defer></script>
        </head>
        <body>
        <header class="top">
          <a class="brand" href="/dashboard">Nimbus</a>
          {{#operator}}
          <nav aria-label="Main">
            <a href="/dashboard">Containers</a>
            <a href="/dashboard/live">Live</a>
            <a href="/dashboard/traces">Traces</a>
            <a href="/dashboard/audit">Audit log</a>
          </nav>
          <form method="post" action="/dashboard/signout" class="signout">
            <input type="hidden" name="csrf" value="{{csrf}}">
            <span class="who">{{operator}}</span>
            <button type="submit">Sign out</button>
          </form>
          {{/operator}}
        </header>
        <main>
        {{$body}}{{/body}}
        </main>
        <footer>node {{node}}</footer>
        </body>
        </html>
        """

    static let signIn = """
        {{<layout}}{{$body}}
        <h1>Sign in</h1>
        <p>Operators sign in here. Make an operator with <code>nimbus operator create NAME</code>.</p>
        {{#message}}<p class="error" role="alert">{{message}}</p>{{/message}}
        <form method="post" action="/dashboard/signin" class="stack">
          <input type="hidden" name="csrf" value="{{signinCSRF}}">
          <input type="hidden" name="next" value="{{next}}">
          <label for="name">Operator name</label>
          <input id="name" name="name" value="{{name}}" autocomplete="username" required autofocus>
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required>
          <button type="submit">Sign in</button>
        </form>
        {{/body}}{{/layout}}
        """

    static let error = """
        {{<layout}}{{$body}}
        <h1>{{title}}</h1>
        <p class="error" role="alert">{{message}}</p>
        <p><a href="/dashboard">Back to the containers</a></p>
        {{/body}}{{/layout}}
        """
}
