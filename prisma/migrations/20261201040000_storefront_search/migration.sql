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

-- Every word of every bike, once: where a word's typos are found. Kept by the trigger below, whoever
-- writes; a word no bike has any more stays (it only finds no bike).
CREATE TABLE "bike_words" (
    "word" TEXT COLLATE "C" NOT NULL,

    CONSTRAINT "bike_words_pkey" PRIMARY KEY ("word")
);

-- CreateIndex
CREATE INDEX "bike_words_word_idx" ON "bike_words" USING GIN ("word" gin_trgm_ops);

INSERT INTO "bike_words" ("word")
SELECT DISTINCT word FROM "bikes", unnest(tsvector_to_array("search_words")) AS word ORDER BY 1
ON CONFLICT DO NOTHING;

-- The words of the rows a statement wrote, those not there yet, in one order (two writers adding
-- the same new words wait for each other in it, never for each other in turn).
CREATE FUNCTION "add_bike_words"() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO "bike_words" ("word")
  SELECT DISTINCT added.word FROM changed_rows, unnest(tsvector_to_array(changed_rows."search_words")) AS added(word)
  WHERE NOT EXISTS (SELECT FROM "bike_words" known WHERE known."word" = added.word)
  ORDER BY 1
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
-- a bike's rank is the first of them it matches (src/bikes/search.ts). Null when `q` has no word.
--
-- The trigram index finds the candidates: a word one edit from one of 5 letters shares at least
-- 3 of its 6 trigrams (similarity 3/9 and more), two edits from one of 9 or more at least 4 of 10
-- (4/16): a threshold of 0.2 misses none, and levenshtein_less_equal then keeps the exact ones.
CREATE FUNCTION "bike_search_queries"(q TEXT) RETURNS tsquery[] LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT SET pg_trgm.similarity_threshold = 0.2 AS $$
DECLARE
  weights CONSTANT TEXT[] := ARRAY['A', 'AB', 'ABC', ''];
  exact TEXT[] := ARRAY['', '', '', ''];
  fuzzy TEXT[] := ARRAY['', '', '', ''];
  words TEXT[];
  typos TEXT[];
  this TEXT;
  term TEXT;
  allowed INTEGER;
  joiner TEXT;
  last BOOLEAN;
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
    IF allowed > 0 THEN
      SELECT coalesce(array_agg(known."word" ORDER BY known."word"), '{}') INTO typos
      FROM "bike_words" known
      WHERE known."word" % this AND known."word" <> this
        AND CASE WHEN abs(length(known."word") - length(this)) <= allowed AND length(known."word") <= 255
          THEN levenshtein_less_equal(known."word", this, allowed) <= allowed ELSE false END;
    END IF;
    joiner := CASE WHEN i > 1 THEN ' & ' ELSE '' END;
    FOR w IN 1 .. 4 LOOP
      term := bike_search_term(this) || CASE WHEN last OR weights[w] <> '' THEN ':' ELSE '' END
        || CASE WHEN last THEN '*' ELSE '' END || weights[w];
      exact[w] := exact[w] || joiner || '(' || term || ')';
      fuzzy[w] := fuzzy[w] || joiner || '(' || term || (
        SELECT coalesce(string_agg(' | ' || bike_search_term(typo) || CASE WHEN weights[w] <> '' THEN ':' ELSE '' END
          || weights[w], ''), '') FROM unnest(typos) AS typo) || ')';
    END LOOP;
  END LOOP;
  RETURN ARRAY[exact[1]::tsquery, exact[2]::tsquery, exact[3]::tsquery, exact[4]::tsquery,
    fuzzy[1]::tsquery, fuzzy[2]::tsquery, fuzzy[3]::tsquery, fuzzy[4]::tsquery];
END
$$;
