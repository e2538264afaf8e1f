"""`/login/<token>/`: a one-time login link, and setting a first password afterwards.

GET shows whose account the link opens and a button; only the POST spends the
link (GETs never write: a mail scanner or a link preview fetching the page must
not use it up). Wrong, used and expired tokens answer the same 404 page, and
count against the visitor's address: past WORKBENCH_LOGIN_LINK_FAILURE_LIMIT in
WORKBENCH_LOGIN_LINK_FAILURE_MINUTES every token answers 429.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters

from annotations.selectors.login_links import login_link_usable
from annotations.services.login_links import login_link_redeem
from workbench.security import client_ip

# The backend that checks nothing more: the link itself is the credential.
BACKEND = "workbench.auth.ModelBackend"


def _failure_key(request: HttpRequest) -> str:
    return f"login-link-failures:{client_ip(request)}"


def _locked_out(request: HttpRequest) -> bool:
    return (cache.get(_failure_key(request)) or 0) >= settings.WORKBENCH_LOGIN_LINK_FAILURE_LIMIT


def _failed(request: HttpRequest) -> HttpResponse:
    key = _failure_key(request)
    cache.add(key, 0, timeout=settings.WORKBENCH_LOGIN_LINK_FAILURE_MINUTES * 60)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=settings.WORKBENCH_LOGIN_LINK_FAILURE_MINUTES * 60)
    return render(request, "accounts/login_link_invalid.html", status=404)


def _too_many(request: HttpRequest) -> HttpResponse:
    minutes = settings.WORKBENCH_LOGIN_LINK_FAILURE_MINUTES
    message = (
        f"Too many invalid login links from this address: try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )
    return render(request, "registration/locked_out.html", {"message": message}, status=429)


@never_cache
def login_link(request: HttpRequest, token: str) -> HttpResponse:
    if _locked_out(request):
        return _too_many(request)
    if request.method == "POST":
        user = login_link_redeem(token=token)
        if user is None:
            return _failed(request)
        login(request, user, backend=BACKEND)
        messages.success(
            request,
            f"You are logged in as {user.get_username()}. The link is used up now: to come "
            "back from another browser, set a password (top right) or ask your project's "
            "owner for a new link.",
        )
        return redirect("annotate-home")
    link = login_link_usable(token=token)
    if link is None:
        return _failed(request)
    return render(request, "accounts/login_link.html", {"link_user": link.user})


@login_required
@sensitive_post_parameters()
def password_set(request: HttpRequest) -> HttpResponse:
    """A first password for an account made by an owner (Django's page asks for the old one)."""
    if request.user.has_usable_password():
        return redirect("password_change")
    form = SetPasswordForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        update_session_auth_hash(request, form.user)
        messages.success(request, "Your password is set: log in with your username and it from now on.")
        return redirect("annotate-home")
    return render(
        request, "accounts/password_set.html", {"form": form}, status=400 if request.method == "POST" else 200
    )
