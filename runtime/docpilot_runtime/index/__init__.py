"""The build side: built HTML pages in, a bundle out."""
