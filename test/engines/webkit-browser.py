#!/usr/bin/python3
"""
The smallest WebKitGTK browser WebKitWebDriver can drive, for test/engines/webkit.ts.

Debian's MiniBrowser, WebKitWebDriver's default, keeps nothing on disk in automation mode, so a
browser restart could not find what the page stored. This one keeps the website data in
--data-dir=PATH, as an installed WebKitGTK browser (GNOME Web) keeps it in its profile.

  --automation        required by WebKitWebDriver, which passes it
  --data-dir=PATH     where cookies, IndexedDB, storage and service workers are kept
  --block-site-data   accept no cookies (the WebKitGTK setting closest to "block site data")
  --version           prints the WebKitGTK version and exits
"""
import sys

import gi

gi.require_version('Gtk', '3.0')
gi.require_version('WebKit2', '4.1')
from gi.repository import Gtk, WebKit2  # noqa: E402

version = (WebKit2.get_major_version(), WebKit2.get_minor_version(), WebKit2.get_micro_version())
if '--version' in sys.argv:
    print('WebKitGTK %d.%d.%d' % version)
    sys.exit(0)

options = dict(arg[2:].split('=', 1) if '=' in arg else (arg[2:], '') for arg in sys.argv[1:] if arg.startswith('--'))
data = options['data-dir']
manager = WebKit2.WebsiteDataManager(base_data_directory=data, base_cache_directory=data + '/cache')
context = WebKit2.WebContext(website_data_manager=manager)
context.set_automation_allowed(True)
if 'block-site-data' in options:
    manager.get_cookie_manager().set_accept_policy(WebKit2.CookieAcceptPolicy.NEVER)
windows = set()


def create_web_view(_session):
    view = WebKit2.WebView(web_context=context, is_controlled_by_automation=True)
    window = Gtk.Window()
    window.set_default_size(1024, 768)
    window.add(view)
    windows.add(window)

    def closed(_view):
        windows.discard(window)
        window.destroy()
        if not windows:
            Gtk.main_quit()

    view.connect('close', closed)
    window.show_all()
    return view


def automation_started(_context, session):
    info = WebKit2.ApplicationInfo()
    info.set_name('sendonce-webkit')
    info.set_version(*version)
    session.set_application_info(info)
    session.connect('create-web-view', create_web_view)


context.connect('automation-started', automation_started)
Gtk.main()
