-- A shopper's search on GET /bikes and GET /bikes/facets (docs/decisions.md#a-shoppers-search):
-- every word of `q` in the title, vendor, product type or description, in any case, accents
-- ignored, a word of 5 to 8 letters with one typo, of 9 or more with two, the last also as a
-- prefix. PostgreSQL's own full-text search: each bike's words in a tsvector, weighted by field
-- (title A, vendor B, product type C, description D), behind a GIN index; and the words of every
-- bike, each once, behind a trigram index, where a word's typos are looked up (then counted
-- exactly, by Levenshtein distance).
CREATE EXTENSION IF NOT EXISTS "unaccent";
CREATE EXTENSION IF NOT EXISTS "fuzzystrmatch";

-- As the other functions (the migration functions_ignore_temporary_tables): the schema's objects
-- first, the session's temporary schema last.
SELECT set_config('search_path', current_setting('search_path') || ', pg_temp', true);

-- A text's words as the search reads them: accents taken off (unaccent), in lower case, split as
-- PostgreSQL's parser splits words ('simple': no stemming, no stop words). unaccent() is only
-- STABLE, as its dictionary could change; this one names its dictionary, and is IMMUTABLE, so a
-- generated column may use it.
CREATE FUNCTION "bike_search_words"(TEXT) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT AS $$
  SELECT to_tsvector('pg_catalog.simple', unaccent('unaccent'::regdictionary, $1))
$$;

-- AlterTable
ALTER TABLE "bikes" ADD COLUMN "search_words" tsvector NOT NULL GENERATED ALWAYS AS (
  setweight(bike_search_words("title"), 'A') || setweight(bike_search_words("vendor"), 'B')
  || setweight(bike_search_words("product_type"), 'C') || setweight(bike_search_words("description"), 'D')
) STORED;

-- CreateIndex
CREATE INDEX "bikes_search_words" ON "bikes" USING GIN ("search_words");

-- GET /bikes/facets: the facets' columns by their keys, and the minimum price, narrow enough for
-- the facets to read them by an index-only scan (src/bikes/facets.ts).
-- CreateIndex
CREATE INDEX "bikes_facets" ON "bikes"("vendor_key", "product_type_key", "available_for_sale", "total_inventory", "min_price_currency_key", "min_price_amount");

-- Every word of every bike, once for each field it is in (its weight: A the title, B the vendor, C
-- the product type, D the description): where a word's typos are found, and which fields a word
-- can match in at all (a rank tier none of whose bikes can exist is never scanned). Kept by the
-- trigger below, whoever writes; a word no bike has any more stays (it only finds no bike).
CREATE TABLE "bike_words" (
    "word" TEXT COLLATE "C" NOT NULL,
    "weight" TEXT COLLATE "C" NOT NULL,

    CONSTRAINT "bike_words_pkey" PRIMARY KEY ("word","weight")
);

-- CreateIndex
CREATE INDEX "bike_words_word_idx" ON "bike_words" USING GIN ("word" gin_trgm_ops);

INSERT INTO "bike_words" ("word", "weight")
SELECT DISTINCT lexeme, weight FROM "bikes", unnest("search_words") AS w, unnest(w.weights) AS weight ORDER BY 1, 2
ON CONFLICT DO NOTHING;

-- The words of the rows a statement wrote, those not there yet, in one order (two writers adding
-- the same new words wait for each other in it, never for each other in turn).
CREATE FUNCTION "add_bike_words"() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO "bike_words" ("word", "weight")
  SELECT DISTINCT added.lexeme, weight FROM changed_rows, unnest(changed_rows."search_words") AS added,
    unnest(added.weights) AS weight
  WHERE NOT EXISTS (SELECT FROM "bike_words" known WHERE known."word" = added.lexeme AND known."weight" = weight)
  ORDER BY 1, 2
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER "bikes_add_words_on_insert" AFTER INSERT ON "bikes"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "add_bike_words"();
CREATE TRIGGER "bikes_add_words_on_update" AFTER UPDATE ON "bikes"
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "add_bike_words"();
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_add_words_on_insert";
ALTER TABLE "bikes" ENABLE ALWAYS TRIGGER "bikes_add_words_on_update";

-- A word as a text-search query's term: quoted, its quotes and backslashes doubled.
CREATE FUNCTION "bike_search_term"(TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT AS $$
  SELECT '''' || replace(replace($1, '\', '\\'), '''', '''''') || ''''
$$;

-- The text-search queries of a shopper's words `q`, as GET /bikes reads them: for each word, the
-- word itself (the last one also as a prefix) or, for a word of 5 to 8 letters, a word of the
-- catalog one edit away (9 or more: two); every word must match. Eight queries, the first four of
-- the words as given (exact), the others with their typos too (fuzzy), each first in the title
-- alone (A), then the title or the vendor (AB), then with the product type (ABC), then anywhere:
-- a bike's rank is the first of them it matches (src/bikes/filters.ts). Null when `q` has no word.
--
-- A query is null too when no bike can match it: when one of the words (its prefixes, its typos)
-- is in no bike's fields of that query (bike_words knows each word's fields). A page by relevance
-- never scans for it (src/bikes/pages.ts). Only the query of the bikes to find (the eighth) is
-- kept whatever the words.
--
-- The trigram index finds the candidates: a word one edit from one of 5 letters shares at least
-- 3 of its 6 trigrams (similarity 3/9 and more), two edits from one of 9 or more at least 4 of 10
-- (4/16): a threshold of 0.2 misses none, and levenshtein_less_equal then keeps the exact ones.
-- The words of a prefix are a range of bike_words' key in the "C" collation (code point order):
-- from the prefix to the prefix with its last character's code point one more.
CREATE FUNCTION "bike_search_queries"(q TEXT) RETURNS tsquery[] LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT SET pg_trgm.similarity_threshold = 0.2 AS $$
DECLARE
  weights CONSTANT TEXT[] := ARRAY['A', 'AB', 'ABC', ''];
  fields CONSTANT TEXT[] := ARRAY['A', 'AB', 'ABC', 'ABCD'];
  exact TEXT[] := ARRAY['', '', '', ''];
  fuzzy TEXT[] := ARRAY['', '', '', ''];
  can_exact BOOLEAN[] := ARRAY[true, true, true, true];
  can_fuzzy BOOLEAN[] := ARRAY[true, true, true, true];
  words TEXT[];
  typos TEXT[];
  this TEXT;
  term TEXT;
  allowed INTEGER;
  joiner TEXT;
  last BOOLEAN;
  upper_code INTEGER;
  found_in TEXT;
  typos_in TEXT;
BEGIN
  SELECT array_agg(lexeme ORDER BY (SELECT min(p) FROM unnest(positions) AS p)) INTO words
  FROM unnest(bike_search_words(q));
  IF words IS NULL THEN
    RETURN NULL;
  END IF;
  FOR i IN 1 .. cardinality(words) LOOP
    this := words[i];
    last := i = cardinality(words);
    allowed := CASE WHEN length(this) >= 9 THEN 2 WHEN length(this) >= 5 THEN 1 ELSE 0 END;
    typos := '{}';
    typos_in := '';
    IF allowed > 0 THEN
      SELECT coalesce(array_agg(DISTINCT known."word" ORDER BY known."word"), '{}'),
        coalesce(string_agg(DISTINCT known."weight", ''), '') INTO typos, typos_in
      FROM "bike_words" known
      WHERE known."word" % this AND known."word" <> this
        AND CASE WHEN abs(length(known."word") - length(this)) <= allowed AND length(known."word") <= 255
          THEN levenshtein_less_equal(known."word", this, allowed) <= allowed ELSE false END;
    END IF;
    -- The fields the word is in (the last: any word it begins).
    upper_code := ascii(right(this, 1)) + 1;
    IF NOT last THEN
      SELECT coalesce(string_agg(DISTINCT known."weight", ''), '') INTO found_in
      FROM "bike_words" known WHERE known."word" = this;
    ELSIF upper_code <= 1114111 AND upper_code NOT BETWEEN 55296 AND 57343 THEN
      SELECT coalesce(string_agg(DISTINCT known."weight", ''), '') INTO found_in
      FROM "bike_words" known
      WHERE known."word" >= this AND known."word" < left(this, -1) || chr(upper_code);
    ELSE
      found_in := 'ABCD';
    END IF;
    joiner := CASE WHEN i > 1 THEN ' & ' ELSE '' END;
    FOR w IN 1 .. 4 LOOP
      can_exact[w] := can_exact[w] AND found_in ~ ('[' || fields[w] || ']');
      can_fuzzy[w] := can_fuzzy[w] AND (found_in || typos_in) ~ ('[' || fields[w] || ']');
      term := bike_search_term(this) || CASE WHEN last OR weights[w] <> '' THEN ':' ELSE '' END
        || CASE WHEN last THEN '*' ELSE '' END || weights[w];
      exact[w] := exact[w] || joiner || '(' || term || ')';
      fuzzy[w] := fuzzy[w] || joiner || '(' || term || (
        SELECT coalesce(string_agg(' | ' || bike_search_term(typo) || CASE WHEN weights[w] <> '' THEN ':' ELSE '' END
          || weights[w], ''), '') FROM unnest(typos) AS typo) || ')';
    END LOOP;
  END LOOP;
  RETURN ARRAY[
    CASE WHEN can_exact[1] THEN exact[1]::tsquery END, CASE WHEN can_exact[2] THEN exact[2]::tsquery END,
    CASE WHEN can_exact[3] THEN exact[3]::tsquery END, CASE WHEN can_exact[4] THEN exact[4]::tsquery END,
    CASE WHEN can_fuzzy[1] THEN fuzzy[1]::tsquery END, CASE WHEN can_fuzzy[2] THEN fuzzy[2]::tsquery END,
    CASE WHEN can_fuzzy[3] THEN fuzzy[3]::tsquery END, fuzzy[4]::tsquery];
END
$$;
