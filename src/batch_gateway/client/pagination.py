"""Listings as pages that page themselves (decision 0131), shaped as the official SDKs' (``openai.pagination``):

::

    for job in client.list_jobs():              # every job, a page fetched only when the previous one is used up
        ...
    page = client.list_jobs(limit=20)           # or page by hand: the first page is fetched here
    page.data, page.has_next_page(), page.get_next_page(), page.iter_pages()

    async for job in aclient.list_jobs():       # async: iterate for every item ...
        ...
    page = await aclient.list_jobs(limit=20)    # ... or await for the first page
    next_page = await page.get_next_page()

The service pages with an opaque ``next_token``; a page whose token repeats the one that fetched it is the last (a
server that keeps answering the same token must not make a client loop forever).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class SyncPage(Generic[T]):
    """One page of a listing: ``data`` and ``next_token``; iterating it yields every item of this page and of every
    page after it, fetching each lazily."""

    def __init__(
        self, data: list[T], next_token: str | None, fetch: Callable[[str], SyncPage[T]], *, token: str | None = None
    ) -> None:
        self.data = data
        self.next_token = next_token
        self._fetch = fetch
        self._token = token  # the token that fetched this page (None: the first)

    def has_next_page(self) -> bool:
        return bool(self.next_token) and self.next_token != self._token

    def get_next_page(self) -> SyncPage[T]:
        if not self.has_next_page() or self.next_token is None:
            raise RuntimeError("no next page: check has_next_page() first")  # as openai's
        return self._fetch(self.next_token)

    def iter_pages(self) -> Iterator[SyncPage[T]]:
        page = self
        yield page
        while page.has_next_page():
            page = page.get_next_page()
            yield page

    def __iter__(self) -> Iterator[T]:
        for page in self.iter_pages():
            yield from page.data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(data=<{len(self.data)} items>, next_token={self.next_token!r})"


class AsyncPage(Generic[T]):
    """One page of a listing (async): ``data``, ``next_token``; ``async for`` yields every item from here on."""

    def __init__(
        self,
        data: list[T],
        next_token: str | None,
        fetch: Callable[[str], Awaitable[AsyncPage[T]]],
        *,
        token: str | None = None,
    ) -> None:
        self.data = data
        self.next_token = next_token
        self._fetch = fetch
        self._token = token

    def has_next_page(self) -> bool:
        return bool(self.next_token) and self.next_token != self._token

    async def get_next_page(self) -> AsyncPage[T]:
        if not self.has_next_page() or self.next_token is None:
            raise RuntimeError("no next page: check has_next_page() first")
        return await self._fetch(self.next_token)

    async def iter_pages(self) -> AsyncIterator[AsyncPage[T]]:
        page = self
        yield page
        while page.has_next_page():
            page = await page.get_next_page()
            yield page

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.iter_pages():
            for item in page.data:
                yield item

    def __repr__(self) -> str:
        return f"{type(self).__name__}(data=<{len(self.data)} items>, next_token={self.next_token!r})"


class AsyncPaginator(Generic[T]):
    """What an async listing returns at once, before any request: ``await`` it for the first page, or ``async for``
    over it for every item of every page (openai's ``AsyncPaginator``)."""

    def __init__(self, first_page: Callable[[], Awaitable[AsyncPage[T]]]) -> None:
        self._first_page = first_page

    def __await__(self) -> Generator[Any, None, AsyncPage[T]]:
        return self._first_page().__await__()

    async def __aiter__(self) -> AsyncIterator[T]:
        page = await self._first_page()
        async for item in page:
            yield item
